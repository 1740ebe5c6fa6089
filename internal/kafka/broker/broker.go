// Package broker starts a real Apache Kafka broker (one node, KRaft: broker
// and controller in one JVM) from the jars `make kafka-broker` installs, on
// free localhost ports and a data directory of the caller's. make run-kafka
// and the distributed-mode tests use it; production points the roles at an
// existing Kafka.
package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// LibsEnv names the folder of the broker's jars; make sets it to
// build/kafka/libs.
const LibsEnv = "TRACESIFT_KAFKA_LIBS"

// Broker is a running broker process.
type Broker struct {
	// Addr is the client listener, host:port.
	Addr string
	dir  string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // how the process ended, once done is closed
	stop sync.Once
}

// Libs finds the broker's jars: $TRACESIFT_KAFKA_LIBS, else build/kafka/libs
// in the working directory or above it.
func Libs() (string, error) {
	if d := os.Getenv(LibsEnv); d != "" {
		return d, checkLibs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if lib := filepath.Join(d, "build", "kafka", "libs"); checkLibs(lib) == nil {
			return lib, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("the Kafka broker's jars are not installed: run `make kafka-broker` (Maven, Java 17)")
		}
	}
}

func checkLibs(dir string) error {
	jars, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		return fmt.Errorf("no kafka_2.13 jar in %s: run `make kafka-broker`", dir)
	}
	return nil
}

// Start formats dir (when it holds no broker yet) and starts a broker on
// addr ("" for a free port) whose controller listens on another free port;
// it returns once clients can reach it. The broker's output goes to
// dir/broker.log.
func Start(ctx context.Context, dir, addr string) (*Broker, error) {
	libs, err := Libs()
	if err != nil {
		return nil, err
	}
	if addr == "" {
		if addr, err = freePort(); err != nil {
			return nil, err
		}
	}
	controller, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	props := filepath.Join(dir, "server.properties")
	// One node, both roles; replication factors of one; a consumer group
	// forms without the default 3 s wait for more members.
	conf := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@" + controller,
		"listeners=PLAINTEXT://" + addr + ",CONTROLLER://" + controller,
		"advertised.listeners=PLAINTEXT://" + addr,
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + data,
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=4",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"auto.create.topics.enable=false",
	}, "\n") + "\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	java := func(args ...string) *exec.Cmd {
		cmd := exec.Command("java", append([]string{"-Xms256m", "-Xmx1g", "-cp", filepath.Join(libs, "*")}, args...)...)
		cmd.Dir = dir
		return cmd
	}
	if _, err := os.Stat(filepath.Join(data, "meta.properties")); err != nil {
		out, err := java("kafka.tools.StorageTool", "format", "-t", clusterID(), "-c", props).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("formatting the broker's storage: %w\n%s", err, lastLines(out))
		}
	}
	log, err := os.OpenFile(filepath.Join(dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	b := &Broker{Addr: addr, dir: dir, log: log, done: make(chan struct{})}
	b.cmd = java("kafka.Kafka", props)
	b.cmd.Stdout, b.cmd.Stderr = log, log
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the caller
	if err := b.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting the broker: %w", err)
	}
	go func() { b.err = b.cmd.Wait(); close(b.done) }()
	if err := b.waitReady(ctx); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// waitReady polls until the broker answers a metadata request (it listens
// ~8 s after the JVM starts), the process ends, or ctx does.
func (b *Broker) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	// A connection of its own each time: a kafka.Client's transport caches
	// metadata, and would answer for a broker that is gone.
	ready := func() bool {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn, err := kafka.DialContext(dctx, "tcp", b.Addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		_, err = conn.Brokers()
		return err == nil
	}
	for {
		if ready() {
			return nil
		}
		select {
		case <-b.done:
			return fmt.Errorf("the broker exited while starting (%v); see %s", b.err, filepath.Join(b.dir, "broker.log"))
		case <-ctx.Done():
			return fmt.Errorf("the broker did not answer on %s: %w; see %s", b.Addr, ctx.Err(), filepath.Join(b.dir, "broker.log"))
		case <-tick.C:
		}
	}
}

// Kill ends the broker at once (SIGKILL), as a crash would; Start on the
// same dir and address brings it back with its data.
func (b *Broker) Kill() {
	b.stop.Do(func() {
		_ = b.cmd.Process.Kill()
		<-b.done
		b.log.Close()
	})
}

// Stop shuts the broker down cleanly (SIGTERM), or kills it after 30 s.
func (b *Broker) Stop() {
	b.stop.Do(func() {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(30 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
		b.log.Close()
	})
}

// PID is the broker JVM's process id.
func (b *Broker) PID() int { return b.cmd.Process.Pid }

// Done is closed when the broker process has ended.
func (b *Broker) Done() <-chan struct{} { return b.done }

// clusterID is a random cluster id as Kafka writes them (16 bytes, base64
// URL-safe), never starting with '-', which the tool would read as an option.
func clusterID() string {
	for {
		id := make([]byte, 16)
		_, _ = rand.Read(id)
		if s := base64.RawURLEncoding.EncodeToString(id); s[0] != '-' {
			return s
		}
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func lastLines(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-10):], []byte("\n")))
}
