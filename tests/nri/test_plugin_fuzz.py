"""Fuzzing the driver: whatever bytes the runtime sends, the plugin survives -
a corrupt connection is closed and re-established, and it registers again."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mokka.nri.codec import mux, ttrpc
from mokka.nri.plugin import PLUGIN_SERVICE, Plugin, PluginConfig
from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path

garbage = st.one_of(
    st.binary(min_size=1, max_size=3000),
    # plausible frames with hostile contents
    st.lists(st.tuples(st.sampled_from([1, 2, 5]), st.binary(max_size=300)), min_size=1,
             max_size=5).map(lambda fs: b"".join(mux.encode_frame(c, p) for c, p in fs)),
    # well-framed calls with garbage payloads
    st.tuples(st.sampled_from(["Configure", "Synchronize", "CreateContainer", "Bogus"]),
              st.binary(max_size=500)).map(
        lambda mp: mux.encode_frames(1, ttrpc.encode_request(1001, PLUGIN_SERVICE, *mp))),
)


def test_the_plugin_survives_any_bytes():
    path = short_socket_path()
    runtime = FakeRuntime(path)
    plugin = Plugin(PluginConfig(socket_path=path, backoff_initial_s=0.005, backoff_max_s=0.02),
                    lambda *a: None)
    thread = threading.Thread(target=plugin.run, daemon=True)
    thread.start()
    state = {"links": 1}

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(garbage)
    def survive(data):
        link = runtime.wait_link(state["links"])
        link.wait_registered()
        try:
            link.send(data)
        except OSError:
            pass                       # the plugin may already have hung up
        link.close()                   # whatever happened, the runtime drops it ...
        state["links"] += 1
        again = runtime.wait_link(state["links"])      # ... and the plugin comes back
        again.wait_registered()
        assert thread.is_alive()

    try:
        survive()
        last = runtime.wait_link(state["links"])
        last.configure()
        assert last.synchronize().code == ttrpc.OK and plugin.health.registered
    finally:
        plugin.stop()
        thread.join(5)
        runtime.close()
        remove_socket_dir(path)
    assert not thread.is_alive()
