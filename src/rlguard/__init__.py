"""rlguard: RLHF post-training that keeps the reward honest."""

__version__ = "0.1.0"
