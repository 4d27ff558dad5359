package main

import (
	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
)

// httpConfig is the HTTP API's configuration, from the settings app.Config
// parsed; app.Config.Validate has checked them.
func httpConfig(c app.Config) httpapi.Config {
	return httpapi.Config{Addr: c.Addr, MaxBodyBytes: c.MaxBodyBytes, RateLimit: c.RateLimit, RateBurst: int(c.RateBurst)}
}
