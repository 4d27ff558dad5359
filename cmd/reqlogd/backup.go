package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/reqlog/reqlog/adapters/sqlite"
	"github.com/reqlog/reqlog/app"
)

// The sqlite store's data directory is backed up and restored by reqlogd
// itself, with no sqlite3 binary (the image has none):
//
//	reqlogd backup [flags] DIR           a copy of REQLOG_SQLITE_DIR into DIR, beside a running reqlogd or not
//	reqlogd restore [flags] BACKUP_DIR   the copy into REQLOG_SQLITE_DIR, which must hold no data
//
// and a running reqlogd backs up into REQLOG_SQLITE_BACKUP_DIR on SIGUSR1
// (backupOnSignal). sqlite.Backup says what a copy is.

// Commands besides serving, by their first argument.
const (
	commandBackup  = "backup"
	commandRestore = "restore"
)

// erasuresFromFlag is reqlogd restore's own flag, besides the settings':
// the data directory the backup replaces (moved aside), whose journal of
// erasures the restore keeps (sqlite.RestoreOptions.ErasuresFrom).
const erasuresFromFlag = "erasures-from"

// runDataCommand runs reqlogd backup or restore with the rest of the
// command line (flags, then the one directory) and returns the exit code.
func runDataCommand(command string, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	var restore sqlite.RestoreOptions
	if command == commandRestore {
		var err error
		if restore.ErasuresFrom, args, err = takeFlag(args, erasuresFromFlag); err != nil {
			return fail(stderr, err)
		}
	}
	cfg, operands, err := loadConfigWithArgs(args, lookupEnv, 1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, configUsage())
		return exitOK
	}
	if err != nil {
		return fail(stderr, err)
	}
	if cfg.Store != storeSQLite {
		return fail(stderr, &app.ConfigError{Setting: "REQLOG_STORE", Value: cfg.Store,
			Reason: "reqlogd " + command + " copies the sqlite store's data directory: back up " + cfg.Store + " with its own tools"})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch command {
	case commandBackup:
		report, err := sqlite.Backup(ctx, cfg.SQLite.Dir, operands[0], cfg.SQLite.BusyTimeout)
		fmt.Fprintf(stdout, "reqlogd: backup of %s into %s: %s\n", cfg.SQLite.Dir, operands[0], describeBackup(report))
		if err != nil {
			return fail(stderr, err)
		}
	case commandRestore:
		if err := sqlite.Restore(ctx, operands[0], cfg.SQLite.Dir, restore); err != nil {
			return fail(stderr, err)
		}
		kept := ""
		if restore.ErasuresFrom != "" {
			kept = ", with the journal of erasures of " + restore.ErasuresFrom
		}
		fmt.Fprintf(stdout, "reqlogd: restored %s into %s%s: start reqlogd on it\n", operands[0], cfg.SQLite.Dir, kept)
	}
	return exitOK
}

// takeFlag takes the flag name and its value (-name VALUE or -name=VALUE,
// one dash or two) out of args, before any "--", and returns the value
// ("" without the flag) and the rest of args.
func takeFlag(args []string, name string) (string, []string, error) {
	for i, arg := range args {
		if arg == "--" {
			break
		}
		flagName, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") || flagName != name {
			continue
		}
		rest := slices.Delete(slices.Clone(args), i, i+1)
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("command line: -%s needs a directory", name)
			}
			value, rest = args[i+1], slices.Delete(rest, i, i+1)
		}
		if value == "" {
			return "", nil, fmt.Errorf("command line: -%s needs a directory", name)
		}
		return value, rest, nil
	}
	return "", args, nil
}

// describeBackup says what a backup did in one line.
func describeBackup(r sqlite.BackupReport) string {
	parts := []string{fmt.Sprintf("%d files copied", len(r.Copied)),
		fmt.Sprintf("%d day files unchanged since the last backup", len(r.Unchanged))}
	if len(r.Removed) > 0 {
		parts = append(parts, fmt.Sprintf("%d day files retention dropped removed", len(r.Removed)))
	}
	return strings.Join(parts, ", ")
}

// backupOnSignal backs the sqlite store's data directory up into
// REQLOG_SQLITE_BACKUP_DIR each time the process gets backupSignal (one
// backup at a time; a signal during one is taken after it), logging what it
// did. The returned func stops it, ending a backup under way.
func backupOnSignal(cfg config, logger *zap.Logger) (stop func()) {
	if cfg.Store != storeSQLite || backupSignal == nil {
		return func() {}
	}
	log := logger.Named("backup")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, backupSignal)
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	done.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-signals:
			}
			if cfg.SQLite.BackupDir == "" {
				log.Warn("backup signal received, but REQLOG_SQLITE_BACKUP_DIR is not set: nothing backed up")
				continue
			}
			report, err := sqlite.Backup(ctx, cfg.SQLite.Dir, cfg.SQLite.BackupDir, cfg.SQLite.BusyTimeout)
			fields := []zap.Field{zap.String("dir", cfg.SQLite.Dir), zap.String("into", cfg.SQLite.BackupDir),
				zap.Int("copied", len(report.Copied)), zap.Int("unchanged", len(report.Unchanged)), zap.Int("removed", len(report.Removed))}
			if err != nil {
				log.Error("backup failed", append(fields, zap.Error(err))...)
				continue
			}
			log.Info("backed up", fields...)
		}
	})
	return func() {
		signal.Stop(signals)
		cancel()
		done.Wait()
	}
}
