"""When a container is left exactly as authored, before anything is selected.

Checked first and in this order: the pod opted out, its namespace is
excluded, or the container already mounts the overlay at the destination.
That last check makes re-adjustment safe: such a container has been through
here before (or brings its own tree), and a second pass would double-apply.
"""

from __future__ import annotations

import functools
import posixpath

from mokka.nri.inject import switch
from mokka.nri.inject.model import Config, Container, Pod

OPT_OUT = "opt-out annotation is false"
EXCLUDED_NAMESPACE = "namespace is excluded"
ALREADY_MOUNTED = "overlay already mounted at the destination"
NOTHING_SELECTED = "nothing selected"
NOTHING_TO_ADD = "selected, but nothing is staged to add"
#: Each reason as the plugin's /metrics labels it (containers_skipped_total{reason}).
LABELS = {OPT_OUT: "opt_out", EXCLUDED_NAMESPACE: "excluded_namespace",
          ALREADY_MOUNTED: "already_mounted", NOTHING_SELECTED: "nothing_selected",
          NOTHING_TO_ADD: "nothing_to_add"}


def authored_reason(config: Config, pod: Pod, container: Container) -> str | None:
    """Why the container must be left as authored, or None to go on selecting."""
    if switch.is_false(pod.annotations, config.opt_out_annotation):
        return OPT_OUT
    if pod.namespace in config.excluded_namespaces:
        return EXCLUDED_NAMESPACE
    if _mounts_overlay(config, container):
        return ALREADY_MOUNTED
    return None


def _mounts_overlay(config: Config, container: Container) -> bool:
    # Normalised, so "/opt/nvml-mock/" or "/opt//nvml-mock" are the same place.
    paths = container.mount_destinations
    if not paths:
        return False
    destination = _normalized(config.overlay_mount_path)
    if destination in paths:
        return True
    # normpath changes a path only through "//", "/." (., ..) or a trailing
    # "/". Most specs have none of those, which one look at all the paths
    # together tells (a dozen per container, on every request).
    try:
        joined = "\0".join(paths) + "\0"
    except TypeError:                   # not all strings: look at each
        joined = "//"
    if "//" not in joined and "/." not in joined and "/\0" not in joined:
        return False
    return any(isinstance(path, str) and posixpath.normpath(path) == destination
               for path in paths)


def overlay_mount_hint(config: Config) -> str:
    """Text that every destination naming the overlay contains: the last
    component of its normalised path (normpath never makes up a component).
    A reader of mounts may skip any mount without it. "" (the overlay at "/")
    rules none out."""
    return posixpath.basename(_normalized(config.overlay_mount_path))


@functools.lru_cache(maxsize=16)
def _normalized(path: str) -> str:
    return posixpath.normpath(path)
