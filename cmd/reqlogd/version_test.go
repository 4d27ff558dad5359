package main

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	stamped := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/reqlog/reqlog", Version: "v0.0.0-20261126232800-4a6bab1c0ffe+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "4a6bab1c0ffe0123456789abcdef0123456789ab"},
			{Key: "vcs.time", Value: "2026-11-26T23:28:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	unstamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/reqlog/reqlog", Version: "(devel)"}}
	goVersion := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                      string
		info                      *debug.BuildInfo
		linkVersion, linkRevision string
		want                      string
	}{
		{"go build with VCS stamping", stamped, "", "",
			"reqlogd v0.0.0-20261126232800-4a6bab1c0ffe+dirty (github.com/reqlog/reqlog, revision 4a6bab1c0ffe0123456789abcdef0123456789ab with local changes, 2026-11-26T23:28:00Z, " + goVersion + ")"},
		{"go install of a tagged version", &debug.BuildInfo{Main: debug.Module{Path: "github.com/reqlog/reqlog", Version: "v1.4.0"}}, "", "",
			"reqlogd v1.4.0 (github.com/reqlog/reqlog, revision unknown, " + goVersion + ")"},
		{"image build: link-time values, no stamping", unstamped, "v1.4.0-3-g4a6bab1", "4a6bab1c0ffe0123456789abcdef0123456789ab",
			"reqlogd v1.4.0-3-g4a6bab1 (github.com/reqlog/reqlog, revision 4a6bab1c0ffe0123456789abcdef0123456789ab, " + goVersion + ")"},
		{"link-time values win over stamping", stamped, "v2.0.0", "feedface",
			"reqlogd v2.0.0 (github.com/reqlog/reqlog, revision feedface, " + goVersion + ")"},
		{"nothing known", nil, "", "", "reqlogd (devel) (revision unknown, " + goVersion + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeBuild(tc.info, tc.linkVersion, tc.linkRevision); got != tc.want {
				t.Errorf("describeBuild\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// -version prints one line from the running binary's build information and
// exits without reading the rest of the configuration or serving.
func TestVersionFlag(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v9.8.7", "0123abcd"
	var stdout, stderr bytes.Buffer
	// An invalid setting beside it shows that nothing else is read.
	code := run([]string{"-version"}, envOf(map[string]string{"REQLOG_STORE": "nonsense"}), &stdout, &stderr)
	if code != exitOK || stderr.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "reqlogd v9.8.7 (") || !strings.Contains(out, "revision 0123abcd") ||
		!strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
		t.Errorf("-version printed %q", out)
	}
	if !strings.Contains(configUsage(), "-version") {
		t.Error("usage does not mention -version")
	}
}
