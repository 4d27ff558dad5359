package app_test

import (
	"testing"

	"github.com/reqlog/reqlog/app"
)

func TestGroupCommitIsOnByDefault(t *testing.T) {
	if got, want := app.DefaultConfig().GroupCommit, app.DefaultGroupCommitConfig(); !got.Enabled || got != want {
		t.Errorf("default group commit %+v, want %+v", got, want)
	}
}
