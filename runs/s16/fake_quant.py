"""Symmetric per-row (activations) and per-column (kernels) int8 fake quantization in numpy, shared by
this session's smoothing analyses (hopper_features.py, hopper_smoothing_diagnosis.py, smoothing_criterion.py)."""
import numpy as np


def q_rows(x):
    s = np.abs(x).max(1, keepdims=True) / 127; s[s == 0] = 1
    return np.round(x / s) * s


def q_cols(w):
    s = np.abs(w).max(0, keepdims=True) / 127; s[s == 0] = 1
    return np.round(w / s) * s
