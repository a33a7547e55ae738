"""Moving readings: a GPU's ``dynamic_metrics`` turned into the values of one second.

The one Python home of the algorithm; native/nvml/dynamic.c is the C one, and
tests/corpus/dynamic_cases.py holds the (inputs -> outputs) vectors both must
give. Every reading is a pure function of (seed, physical GPU index, second),
in unsigned 64-bit integer arithmetic only (``& MASK`` after every product),
so Python and C agree bit for bit:

    draw(seed, gpu, t, channel) = mix(mix(mix(mix(seed) ^ gpu) ^ channel) ^ t)
        mix: splitmix64's step (add 0x9E3779B97F4A7C15, then its finalizer)
    pick(h, lo, hi) = lo + h mod (hi - lo + 1)                   (hi >= lo)
    ramp(t, r, T)   = r * smooth(u) >> 16, u = 2 * min(t mod T, T - t mod T) * 65536 // T,
                      smooth(u) = ((u * u) >> 16) * (3 * 65536 - 2 * u) >> 16
                      (smoothstep of a triangle wave: 0 at t = 0, r at T/2, 0 again at T)

    temperature = base_c + ramp(t, ramp_c, ramp_period_sec)
                  + pick(draw(.., TEMPERATURE), -variance_c, variance_c),
                  clamped to [0, thermal.shutdown_threshold_c]
    power       = base_mw + pick(draw(.., POWER), -variance_mw, variance_mw),
                  clamped to [power.min_limit_mw, power.max_limit_mw]
    utilization (gpu with channel UTIL_GPU, memory with UTIL_MEMORY), lo..hi within 0..100:
        patterned(lo, hi), where by the block's pattern
        idle: lo; busy: hi; steady: pick(draw, lo, hi);
        burst: hi in the first half of every burst_period_sec (t mod P < (P + 1) // 2), lo after
    memory used (Mokka's own block, channel MEMORY_USED), in whole MiB, then bytes:
        usable = (memory.total_bytes - memory.reserved_bytes) >> 20   (0 when negative)
        lo = usable * used_min_pct // 100, hi = usable * used_max_pct // 100 (pcts within 0..100)
        used_bytes = patterned(lo, hi) << 20, with the memory block's own pattern and period;
        so free = total - reserved - used never goes below 0. No total_bytes: nothing moves.

A block left out moves nothing. Defaults: seed 0; base_c / base_mw the state's
static reading; variance, ramp 0; ramp_period_sec 0 (no ramp); pattern steady;
gpu/memory min 0, max 100; used_min_pct 0, used_max_pct 100; burst_period_sec 30. ``t`` is the whole second: of
``MOCK_NVML_CLOCK`` when it holds a non-negative integer, else of the real time.
"""

from __future__ import annotations

import time

from mokka.core import names

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
#: Channels: one independent stream of draws per reading.
TEMPERATURE, POWER, UTIL_GPU, UTIL_MEMORY, MEMORY_USED = 1, 2, 3, 4, 5
ONE = 1 << 16                       # fixed point of the ramp


def clock(environ) -> int:
    """The second the readings are for."""
    pinned = (environ.get(names.ENV_NVML_CLOCK) or "").strip(" \t\n")
    if pinned.isascii() and pinned.isdigit() and int(pinned) <= MASK:
        return int(pinned)
    return int(time.time())


def mix(x: int) -> int:
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(seed: int, gpu: int, t: int, channel: int) -> int:
    return mix(mix(mix(mix(seed & MASK) ^ gpu) ^ channel) ^ (t & MASK))


def pick(h: int, lo: int, hi: int) -> int:
    return lo + h % (hi - lo + 1)


def ramp(t: int, height: int, period: int) -> int:
    if period <= 0 or height <= 0:
        return 0
    phase = t % period
    u = 2 * min(phase, period - phase) * ONE // period
    smooth = ((u * u) >> 16) * (3 * ONE - 2 * u) >> 16
    return height * smooth >> 16


def _clamp(value: int, lo, hi) -> int:
    if hi is not None and value > hi:
        value = hi
    if lo is not None and value < lo:
        value = lo
    return value


def temperature(block: dict, seed: int, gpu: int, t: int, static: int, shutdown) -> int:
    variance = _field(block, "variance_c", 0)
    value = _field(block, "base_c", static) \
        + ramp(t, _field(block, "ramp_c", 0), _field(block, "ramp_period_sec", 0)) \
        + pick(draw(seed, gpu, t, TEMPERATURE), -variance, variance)
    return _clamp(value, 0, shutdown)


def power(block: dict, seed: int, gpu: int, t: int, static: int, low, high) -> int:
    variance = _field(block, "variance_mw", 0)
    value = _field(block, "base_mw", static) + pick(draw(seed, gpu, t, POWER), -variance, variance)
    return _clamp(value, low, high)


def patterned(block: dict, lo: int, hi: int, t: int, steady_draw: int) -> int:
    """lo..hi over time by the block's ``pattern`` and ``burst_period_sec``."""
    pattern = str(block.get("pattern") or names.DYNAMIC_PATTERN_STEADY).lower()
    if pattern == names.DYNAMIC_PATTERN_IDLE:
        return lo
    if pattern == names.DYNAMIC_PATTERN_BUSY:
        return hi
    if pattern == names.DYNAMIC_PATTERN_BURST:
        period = _field(block, "burst_period_sec", 0)
        period = period if period > 0 else names.DYNAMIC_BURST_PERIOD_DEFAULT_SEC
        return hi if t % period < (period + 1) // 2 else lo
    return pick(steady_draw, lo, hi)


def utilization(block: dict, seed: int, gpu: int, t: int, which: str) -> int:
    lo = _clamp(_field(block, f"{which}_min", 0), 0, 100)
    hi = _clamp(_field(block, f"{which}_max", 100), lo, 100)
    return patterned(block, lo, hi, t, draw(seed, gpu, t, UTIL_GPU if which == "gpu" else UTIL_MEMORY))


def memory_used(block: dict, seed: int, gpu: int, t: int, total: int, reserved: int) -> int:
    """Bytes used: whole MiB between the block's percentages of the usable memory."""
    usable = max(total - reserved, 0) >> 20
    lo_pct = _clamp(_field(block, "used_min_pct", 0), 0, 100)
    hi_pct = _clamp(_field(block, "used_max_pct", 100), lo_pct, 100)
    lo, hi = usable * lo_pct // 100, usable * hi_pct // 100
    return patterned(block, lo, hi, t, draw(seed, gpu, t, MEMORY_USED)) << 20


def apply(gpu: dict, t: int) -> None:
    """Write the readings of second t into one GPU of the state (physical ``index``)."""
    dm = gpu.get("dynamic_metrics")
    if not isinstance(dm, dict):
        return
    seed, index = _field(dm, "seed", 0), int(gpu["index"])
    block = _block(dm, "temperature")
    if block:
        thermal = gpu.setdefault("thermal", {})
        thermal["temperature_gpu_c"] = temperature(
            block, seed, index, t, _int(thermal.get("temperature_gpu_c")),
            _opt(thermal.get("shutdown_threshold_c")))
    block = _block(dm, "power")
    if block:
        pw = gpu.setdefault("power", {})
        pw["current_draw_mw"] = power(block, seed, index, t, _int(pw.get("current_draw_mw")),
                                      _opt(pw.get("min_limit_mw")), _opt(pw.get("max_limit_mw")))
    block = _block(dm, "utilization")
    if block:
        util = gpu.setdefault("utilization", {})
        util["gpu"] = utilization(block, seed, index, t, "gpu")
        util["memory"] = utilization(block, seed, index, t, "memory")
    block = _block(dm, "memory")
    mem = gpu.get("memory")
    if block and isinstance(mem, dict) and mem.get("total_bytes") is not None:
        mem["used_bytes"] = memory_used(block, seed, index, t, _int(mem.get("total_bytes")),
                                        _int(mem.get("reserved_bytes")))


def _block(dm: dict, name: str) -> dict | None:
    """A block with at least one value (the C side sees only those: flatstate drops None)."""
    block = dm.get(name)
    if isinstance(block, dict) and any(v is not None for v in block.values()):
        return block
    return None


def _field(block: dict, key: str, default: int) -> int:
    """An integer field; left out (or empty) is the default."""
    value = block.get(key)
    return default if value is None else int(value)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _opt(value):
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
