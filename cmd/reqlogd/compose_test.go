package main

import (
	"testing"

	"github.com/reqlog/reqlog/adapters/httpapi"
	"github.com/reqlog/reqlog/app"
)

func TestHTTPConfigComesFromTheSettings(t *testing.T) {
	cfg, err := app.LoadConfig([]string{"-addr", "127.0.0.1:9999", "-max-body-bytes", "1234", "-rate-limit", "2.5", "-rate-burst", "7"},
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.Config{Addr: "127.0.0.1:9999", MaxBodyBytes: 1234, RateLimit: 2.5, RateBurst: 7}
	if got := httpConfig(cfg); got != want {
		t.Errorf("httpConfig = %+v, want %+v", got, want)
	}
}
