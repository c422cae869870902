"""What the command line and the headless sweep share on the host machine, below both:
``files`` (the repository's paths, the usage error, atomic writes, the ``--param`` parser),
``seal_file`` (a study-level seal's file, which ``matrix`` writes and a sweep or a simulation
reads) and ``serve`` (the static server of the built site and of a local model hub). A package of
its own so that ``pyapp.sweep`` needs nothing from ``pyapp.cli``, which sits above it."""

from pyapp.host.files import (
    EXPORTS,
    REPO_ROOT,
    check_output_folder,
    input_file,
    input_folder,
    output_file,
    output_folder,
    param_overrides,
    task_params_of,
    write_atomically,
)
from pyapp.host.seal_file import read_seal, write_seal
from pyapp.host.serve import (
    HUB_COMMIT,
    BoundedServer,
    HardenedHandler,
    check_site,
    is_loopback,
    make_server,
    place,
    serve_hub_in_thread,
    serve_in_thread,
    server_url,
    write_probe_page,
)

__all__ = [
    "EXPORTS",
    "HUB_COMMIT",
    "REPO_ROOT",
    "BoundedServer",
    "HardenedHandler",
    "check_output_folder",
    "check_site",
    "input_file",
    "input_folder",
    "is_loopback",
    "make_server",
    "output_file",
    "output_folder",
    "param_overrides",
    "place",
    "read_seal",
    "serve_hub_in_thread",
    "serve_in_thread",
    "server_url",
    "task_params_of",
    "write_atomically",
    "write_probe_page",
    "write_seal",
]
