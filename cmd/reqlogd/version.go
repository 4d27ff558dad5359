package main

import (
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
)

// version and revision are set at link time (-ldflags "-X main.version=v1.2.3
// -X main.revision=<commit>") by builds that cannot stamp the VCS state into the
// binary, such as the container image, whose build context leaves .git out. When
// set they take the place of what debug.ReadBuildInfo reports.
var (
	version  string
	revision string
)

// errVersionRequested is loadConfig's answer to -version: print buildVersion.
var errVersionRequested = errors.New("version requested")

// buildVersion describes the running binary in one line, e.g.
// "reqlogd v1.2.0 (github.com/reqlog/reqlog, revision 4a6bab1…, 2026-11-26T23:28:00Z, go1.26.8 linux/amd64)".
func buildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(info, version, revision)
}

// describeBuild is buildVersion for a given build: the main module's version
// and the VCS revision, time and modified flag that go build stamps (Go 1.24 and
// later also derive the version from them), each replaced by the link-time value
// when there is one. info may be nil (a binary built without module support).
func describeBuild(info *debug.BuildInfo, linkVersion, linkRevision string) string {
	modulePath, moduleVersion := "", ""
	vcs := map[string]string{}
	if info != nil {
		modulePath, moduleVersion = info.Main.Path, info.Main.Version
		for _, s := range info.Settings {
			vcs[s.Key] = s.Value
		}
	}
	if linkVersion != "" {
		moduleVersion = linkVersion
	}
	if moduleVersion == "" {
		moduleVersion = "(devel)"
	}
	details := []string{}
	if modulePath != "" {
		details = append(details, modulePath)
	}
	switch {
	case linkRevision != "":
		details = append(details, "revision "+linkRevision)
	case vcs["vcs.revision"] != "":
		rev := "revision " + vcs["vcs.revision"]
		if vcs["vcs.modified"] == "true" {
			rev += " with local changes"
		}
		details = append(details, rev)
		if t := vcs["vcs.time"]; t != "" {
			details = append(details, t)
		}
	default:
		details = append(details, "revision unknown")
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return "reqlogd " + moduleVersion + " (" + strings.Join(details, ", ") + ")"
}
