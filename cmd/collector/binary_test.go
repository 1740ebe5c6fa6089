package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built binary runs as a new user runs it: without the Makefile's
// environment (no CHDB_LIB_PATH), from a folder of its own. It answers
// --help without the engine, stops with one clear line when the engine is
// nowhere to be found, and finds it beside itself.
func TestBinaryRunsOnItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tracesift")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHDB_LIB_PATH=") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") &&
			!strings.HasPrefix(kv, "TRACESIFT_") {
			env = append(env, kv)
		}
	}
	run := func(ctx context.Context, extra []string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, env...), extra...)
		return cmd
	}

	for _, args := range [][]string{{"--help"}, {"components"}} {
		out, err := run(context.Background(), nil, args...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		assert.NotContains(t, string(out), "goroutine ", "%v", args)
	}

	endpoints := func() []string {
		return []string{
			"TRACESIFT_DATA_DIR=" + filepath.Join(dir, "data"),
			fmt.Sprintf("TRACESIFT_QUERY_ENDPOINT=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("TRACESIFT_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("TRACESIFT_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("TRACESIFT_LOKI_ENDPOINT=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("TRACESIFT_METRICS_PORT=%d", freePort(t)),
		}
	}

	// Nowhere to be found: one clear line, no stack trace. (Skipped where
	// the system's loader knows the engine.)
	if h, err := purego.Dlopen("libchdb.so", purego.RTLD_LAZY); err == nil {
		_ = purego.Dlclose(h)
		t.Log("libchdb.so is in the system's library paths: not testing the message for a missing engine")
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		health := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var stderr bytes.Buffer
		cmd := run(ctx, append(endpoints(), "TRACESIFT_HEALTH_ENDPOINT="+health))
		cmd.Stderr = &stderr
		err := cmd.Run()
		require.Error(t, err, "starts without the engine")
		assert.Contains(t, stderr.String(), "embedded ClickHouse engine (libchdb.so) was not found")
		assert.Contains(t, stderr.String(), "make deps")
		assert.NotContains(t, stderr.String(), "goroutine ")
	}

	// Beside the binary: it starts and serves.
	wd, err := os.Getwd()
	require.NoError(t, err)
	lib := filepath.Join(wd, "..", "..", "node_modules", "@chdb", "lib-linux-x64-gnu", "libchdb.so")
	require.FileExists(t, lib, "make deps installs the engine")
	require.NoError(t, os.Symlink(lib, filepath.Join(dir, "libchdb.so")))
	health := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := run(ctx, append(endpoints(), "TRACESIFT_HEALTH_ENDPOINT="+health))
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, "the health check of the binary", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the binary stopped: %v\n%s", err, stderr.String())
		default:
		}
		return answersOK("http://" + health + "/")
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-exited, "%s", stderr.String())
}
