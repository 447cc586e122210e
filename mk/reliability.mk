# Reliability targets (sanitizers, valgrind, Oclgrind): see the README.
