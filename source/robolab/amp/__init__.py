"""Adversarial motion priors: AMP state features, reference clips, the discriminator and scripted gaits."""
