"""From a cleared round to a cluster: a ``gensolver.plan/v1`` plan as Slurm jobs or Kubernetes objects.

- :mod:`gensolver.adapters.slurm`: batch scripts;
- :mod:`gensolver.adapters.slurm_cluster`: ``sbatch``/``sacct``/``scancel``, a journal of job ids;
- :mod:`gensolver.adapters.k8s`: Jobs (and the ConfigMaps a flavor needs) as plain data;
- :mod:`gensolver.adapters.flavors`: one table entry per GPU-sharing convention
  (``nvidia``, ``hami``, ``kai``, ``kueue``);
- :mod:`gensolver.adapters.crd`: the GenTask CustomResourceDefinition.

See ``docs/how-to/slurm.md`` and ``docs/how-to/kubernetes.md``.
"""

from .common import AdapterError, node_of

__all__ = ["AdapterError", "node_of"]
