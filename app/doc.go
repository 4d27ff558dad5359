// Package app holds reqlog's use cases (Ingester, Reader), their Config, the
// retention purge job and the fx module that wires them. It imports the domain, the
// ports and the frameworks (fx, zap), never an adapter: adapters depend on app, and
// cmd/reqlogd chooses them.
package app
