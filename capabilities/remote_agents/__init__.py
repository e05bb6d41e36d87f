"""Remote agents over A2A: registrations (Connections → Remote agents) and the delegate that calls one."""
