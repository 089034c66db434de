"""PostgreSQL's shared memory: the byte layouts of its structs and the memory of each version."""
