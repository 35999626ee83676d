"""What the supervisor refuses, by kind; the control API (lab.processes.control_api) gives each its HTTP status."""


class SupervisorError(Exception):
    """A request that cannot be done in the cluster's present state (a node already killed, ...)."""


class NotFound(SupervisorError):
    """No such node, action or resource."""


class BadRequest(SupervisorError):
    """Arguments that are wrong whatever the state."""
