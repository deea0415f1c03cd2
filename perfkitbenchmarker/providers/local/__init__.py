"""The Local provider: each VM is a scratch directory and a set of cores."""
