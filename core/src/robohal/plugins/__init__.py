"""The plugin machinery: what plugins implement and how robohal finds them.

- :mod:`.hookspecs`: the hooks a plugin implements
- :mod:`.records`: the typed records the hooks return (:class:`ModelSpec`, :class:`BackendSpec`, ...),
  whose callables may be lazy dotted references (``"package.module:attribute"``)
- :mod:`.registry`: discovery through entry points, and the registry of models and backends
- :mod:`.builtin`: the core's own plugin (the ``sim`` backend, ``generic.planar2``), registered in code
"""
