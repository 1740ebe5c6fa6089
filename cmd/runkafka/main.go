// Command runkafka is `make run-kafka`: distributed mode on one machine. It
// starts an Apache Kafka broker (one KRaft node, data in data/kafka) and the
// roles as processes of bin/tracesift with their configurations in
// deploy/kafka — the gateway on the usual ports (OTLP 4317/4318, Loki 3100),
// two samplers, the ingester with the query API on 16686 — and stops them
// all on Ctrl-C. Each role's output goes to data/<role>.log.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/tracesift/tracesift/internal/kafka/broker"
)

// role is one process: its name, its configuration and its environment.
type role struct {
	name, config string
	env          []string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "run-kafka:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	data, err := filepath.Abs("data")
	if err != nil {
		return err
	}
	fmt.Println("starting the Kafka broker (data in data/kafka) …")
	b, err := broker.Start(ctx, filepath.Join(data, "kafka"), env("TRACESIFT_KAFKA_ADDR", "localhost:9092"))
	if err != nil {
		return err
	}
	defer b.Stop()
	common := []string{"TRACESIFT_KAFKA_BROKERS=" + b.Addr}
	roles := []role{
		{"ingester", "deploy/kafka/ingester.yaml", []string{"TRACESIFT_DATA_DIR=" + filepath.Join(data, "ingester"),
			"TRACESIFT_HEALTH_ENDPOINT=localhost:13133", "TRACESIFT_METRICS_PORT=8888"}},
		{"sampler-1", "deploy/kafka/sampler.yaml", []string{"TRACESIFT_HEALTH_ENDPOINT=localhost:13134", "TRACESIFT_METRICS_PORT=8889"}},
		{"sampler-2", "deploy/kafka/sampler.yaml", []string{"TRACESIFT_HEALTH_ENDPOINT=localhost:13135", "TRACESIFT_METRICS_PORT=8890"}},
		{"gateway", "deploy/kafka/gateway.yaml", []string{"TRACESIFT_HEALTH_ENDPOINT=localhost:13136", "TRACESIFT_METRICS_PORT=8891"}},
	}
	type proc struct {
		cmd  *exec.Cmd
		done chan struct{}
	}
	var procs []proc
	defer func() {
		// The gateway first, then the samplers, the ingester last.
		for i := len(procs) - 1; i >= 0; i-- {
			_ = procs[i].cmd.Process.Signal(syscall.SIGTERM)
			<-procs[i].done
		}
	}()
	exited := make(chan string, len(roles))
	for _, r := range roles {
		log, err := os.Create(filepath.Join(data, r.name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.Command("bin/tracesift", "--config", r.config)
		cmd.Env = append(append(os.Environ(), common...), r.env...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", r.name, err)
		}
		fmt.Printf("%-9s pid %d: bin/tracesift --config %s (log: data/%s.log)\n", r.name, cmd.Process.Pid, r.config, r.name)
		p := proc{cmd: cmd, done: make(chan struct{})}
		procs = append(procs, p)
		go func() { _ = cmd.Wait(); _ = log.Close(); close(p.done); exited <- r.name }()
	}
	fmt.Println("OTLP on localhost:4317 (gRPC) and :4318 (HTTP), Loki on :3100, the API and UI on http://localhost:16686/; Ctrl-C stops all")
	select {
	case <-ctx.Done():
		fmt.Println("\nstopping …")
		return nil
	case name := <-exited:
		return fmt.Errorf("%s exited; see data/%s.log", name, name)
	case <-b.Done():
		return fmt.Errorf("the Kafka broker exited; see data/kafka/broker.log")
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
