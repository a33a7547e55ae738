"""The NRI plugin: the runtime half (protocol, driver, probes) and the decision (inject/)."""
