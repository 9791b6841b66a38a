"""The benchmark harness: targets, references, runners for every peer, metrics and plots.

The samplers (``pymc_kernel_steps.core`` and ``pymc_kernel_steps.steps``) never import it. What
it needs beyond the package's own dependencies comes with the ``bench`` extra
(``pip install pymc-kernel-steps[bench]``).
"""
