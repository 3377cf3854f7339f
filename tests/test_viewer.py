"""The web viewer (``play.py --viewer web``) in a real headless browser: the page loads, the scene moves and the
robot is in the picture (Debian's chromium and chromedriver, through selenium)."""

from __future__ import annotations

import io
import json
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, TINY, clean_env, free_port, run, train_cmd
from robolab import evaluation, viewer
from robolab.envs import VelocityEnv
from robolab.tasks.velocity.go2.env_cfgs import Go2FlatEnvCfg


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    assert driver_path, "chromium's driver is needed: apt-get install chromium chromium-driver"
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=800,600"):
        options.add_argument(arg)
    # WebGL without a GPU: Chromium's software rasteriser
    options.add_argument("--use-angle=swiftshader")
    options.add_argument("--enable-unsafe-swiftshader")
    return webdriver.Chrome(service=Service(driver_path), options=options)


def screenshot(driver) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")).astype(int)


def dark_pixels(image: np.ndarray) -> int:
    """The robot's geoms are dark grey; the ground, grid and page are light."""
    return int((image.max(axis=-1) < 90).sum())


def wait_for(predicate, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_web_viewer_page_loads_updates_and_shows_the_robot():
    cfg = Go2FlatEnvCfg(num_envs=2)
    cfg.backend.num_threads = 1
    env = VelocityEnv(cfg)
    web = viewer.WebViewer(env, port=free_port(), num_shown=2)
    stop = threading.Event()

    def policy(obs):
        if stop.is_set():
            raise KeyboardInterrupt
        return 0.5 * torch.randn(env.num_envs, env.num_actions)

    loop = threading.Thread(
        target=evaluation.evaluate,
        args=(env, policy, None),
        kwargs={"real_time": True, "on_step": lambda e, err: web.update(e.commands, err)},
    )
    loop.start()
    driver = browser()
    try:
        driver.get(web.url)
        assert driver.title == "Viser"
        wait_for(lambda: "error m/s" in driver.page_source)  # the command / tracking error table
        wait_for(lambda: dark_pixels(screenshot(driver)) > 2500)
        first = screenshot(driver)
        time.sleep(2.0)
        second = screenshot(driver)
        moved = int((np.abs(first - second).sum(axis=-1) > 30).sum())
        assert moved > 200, f"the scene did not move: {moved} pixels changed"
        # the robot is in the picture: hiding its geoms takes away a robot's worth of dark pixels (what stays dark
        # is the panels' text)
        with_robot = dark_pixels(screenshot(driver))
        web.set_robot_visible(False)
        time.sleep(1.5)
        without_robot = dark_pixels(screenshot(driver))
        assert with_robot - without_robot > 1000, (with_robot, without_robot)
        assert web.frames > 20
    finally:
        driver.quit()
        stop.set()
        loop.join(timeout=30)
        web.close()
        env.close()


def test_the_terrain_mesh_is_the_ground_mujoco_stands_on_sampled_down_to_fit():
    from robolab.terrains import generate
    from robolab.terrains.field import TerrainField
    from test_terrain import small_terrain

    terrain = generate(small_terrain())
    field = TerrainField(terrain, 1, torch.device("cpu"), torch.Generator(), 0)
    rng = np.random.default_rng(0)
    x0, y0 = terrain.origin
    ex, ey = terrain.extent
    # points on the box tiles' boxes (where the height field alone would be wrong) and anywhere on the map
    boxes = terrain.boxes[rng.integers(0, len(terrain.boxes), 200)]
    on_boxes = boxes[:, :2] + rng.uniform(-0.9, 0.9, (200, 2)) * boxes[:, 3:5]
    anywhere = np.stack([rng.uniform(x0, x0 + ex, 200), rng.uniform(y0, y0 + ey, 200)], axis=1)
    points = np.concatenate([on_boxes, anywhere])
    ground = field.height_at(torch.as_tensor(points, dtype=torch.float32)).numpy()
    # seen from above, the mesh is the ground: its highest face over a point is where MuJoCo's ground is, at full
    # resolution (42 k samples here) everywhere, sampled down to fit 20 k vertices still on every box
    for budget, checked in ((60_000, slice(None)), (20_000, slice(200))):
        vertices, faces = viewer.terrain_mesh(terrain, max_vertices=budget)
        assert len(vertices) <= budget and faces.max() < len(vertices)
        triangles = vertices[faces].astype(np.float64)
        top = np.concatenate([_highest_face_over(triangles, chunk) for chunk in np.array_split(points, 16)])
        np.testing.assert_allclose(top[checked], ground[checked], atol=1e-5)
        # the field's own vertices off the box tiles are the ground at their samples, sampled down or not
        field_vertices = vertices[: len(vertices) - 8 * len(terrain.boxes)]
        nearest = np.round((field_vertices[:, :2] - terrain.origin) / terrain.spacing).astype(int)
        off_boxes = field_vertices[~terrain.stepped[nearest[:, 1], nearest[:, 0]]]
        on_ground = field.height_at(torch.as_tensor(off_boxes[:, :2]))
        torch.testing.assert_close(torch.as_tensor(off_boxes[:, 2]), on_ground, atol=1e-5, rtol=0)


def _highest_face_over(triangles: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The highest z of the non-vertical triangles (F, 3, 3) over each point (P, 2); -inf where there is none."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
    keep = np.abs(det) > 1e-9
    a, b, c, det = a[keep], b[keep], c[keep], det[keep]
    dx, dy = points[:, None, 0] - a[None, :, 0], points[:, None, 1] - a[None, :, 1]
    u = (dx * (c[:, 1] - a[:, 1]) - dy * (c[:, 0] - a[:, 0])) / det
    v = (dy * (b[:, 0] - a[:, 0]) - dx * (b[:, 1] - a[:, 1])) / det
    inside = (u >= -1e-6) & (v >= -1e-6) & (u + v <= 1 + 1e-6)
    z = a[:, 2] + u * (b[:, 2] - a[:, 2]) + v * (c[:, 2] - a[:, 2])
    return np.where(inside, z, -np.inf).max(axis=1)


@pytest.mark.slow
def test_web_viewer_draws_the_generated_terrain():
    from robolab.tasks.velocity.go2.env_cfgs import Go2RoughEnvCfg
    from test_terrain import small_terrain

    cfg = Go2RoughEnvCfg(num_envs=2, terrain=small_terrain())
    cfg.backend.num_threads = 1
    env = VelocityEnv(cfg)
    web = viewer.WebViewer(env, port=free_port(), num_shown=2)
    driver = browser()
    try:
        web.update(env.commands.tolist(), [0.0, 0.0])
        driver.get(web.url)
        wait_for(lambda: "error m/s" in driver.page_source)
        web.update(env.commands.tolist(), [0.0, 0.0])
        time.sleep(3.0)
        with_terrain = screenshot(driver)
        web.set_terrain_visible(False)
        time.sleep(1.5)
        changed = int((np.abs(screenshot(driver) - with_terrain).sum(axis=-1) > 30).sum())
        assert changed > 20_000, f"hiding the terrain changed only {changed} pixels"
    finally:
        driver.quit()
        web.close()
        env.close()


@pytest.mark.slow
def test_play_viewer_web_serves_and_reports(tmp_path):
    logs = str(tmp_path / "logs")
    assert run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", logs)).returncode == 0
    port = str(free_port())
    play = [sys.executable, str(ROOT / "scripts" / "play.py"), "--log_root", logs, "--num_envs", "2"]
    res = run([*play, "--viewer", "web", "--viewer_port", port, "--steps", "10", "--no_export"])
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"web viewer: http://localhost:{port}" in res.stdout and '"steps": 10' in res.stdout


def listening_addresses(port: int) -> set[str]:
    """The IPv4/IPv6 addresses a TCP socket of this machine listens on at ``port`` (Linux's /proc/net tables)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_web_viewer_listens_on_this_machine_only_unless_told_otherwise():
    cfg = Go2FlatEnvCfg(num_envs=1)
    cfg.backend.num_threads = 1
    env = VelocityEnv(cfg)
    for host, listens, shown in ((None, {"0100007F"}, "localhost"), ("0.0.0.0", {"00000000"}, "0.0.0.0")):
        port = free_port()
        chosen = {} if host is None else {"host": host}  # None: the default
        web = viewer.WebViewer(env, port=port, num_shown=1, **chosen)
        try:
            assert listening_addresses(port) == listens  # 127.0.0.1 by default, every interface when asked
            assert web.url == f"http://{shown}:{port}"
        finally:
            web.close()
    env.close()


def test_viewer_choice():
    assert viewer.pick_viewer("web") == "web"
    with pytest.raises(ValueError, match="--viewer='vr': allowed: auto, native, web"):
        viewer.pick_viewer("vr")


@pytest.mark.slow
def test_native_viewer_opens_mujocos_window_on_a_display(tmp_path):
    """``--viewer`` on a desktop (a display: Xvfb here, Debian's xvfb) is MuJoCo's own passive viewer."""
    xvfb = shutil.which("xvfb-run")
    assert xvfb, "the native viewer's test needs a display server: apt-get install xvfb"
    logs = str(tmp_path / "logs")
    assert run(train_cmd(*TINY, "--max_iterations", "1", "--log_root", logs)).returncode == 0
    play = [sys.executable, str(ROOT / "scripts" / "play.py"), "--log_root", logs, "--num_envs", "2"]
    res = run([xvfb, "-a", *play, "--viewer", "--steps", "15", "--no_export"], env=clean_env(MUJOCO_GL="glfw"))
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads(res.stdout[res.stdout.index("{\n") :])
    assert result["viewer"] == "native" and result["viewer_frames"] == 15
