"""The Redis price-performance study: the steps its benchmark modules wire.

Everything here takes frozen options (options.py reads the flags); the
server is reached only through engines/, the load through load_generators/.
"""
