"""Part (included by the deep-tree cheats): a chain of nested folders made by descriptor, so no
path of it is ever spelled out (the whole outruns PATH_MAX)."""
import os


def deep_chain(top: str, depth: int = 4000) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
