package kafka

import (
	"context"
	"errors"
	"sync"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/tailsampler"
	"github.com/tracesift/tracesift/internal/tenant"
)

// GroupConfig is how a role joins its consumer group.
type GroupConfig struct {
	// ID is the consumer group: the samplers share one, the ingesters
	// another.
	ID string `mapstructure:"group_id"`
	// SessionTimeout is how long the broker waits for a member's heartbeat
	// before handing its partitions to the others: the bound on how long a
	// crashed sampler's traces wait. Default 10 s.
	SessionTimeout time.Duration `mapstructure:"session_timeout"`
	// CommitInterval is how often safe offsets are committed. Default 1 s.
	CommitInterval time.Duration `mapstructure:"commit_interval"`
}

// SamplerConsumer reads the spans topic in the samplers' consumer group and
// hands each message to the tail sampler with a receipt; a partition's
// offset is committed up to its lowest message whose traces are not yet
// decided and handed on (offsets). At a rebalance (kafka-go's are eager:
// every member stops) it discards its undecided traces, which the
// partitions' next owners read again from the committed offsets, and loads
// the recent decisions of the partitions it gets, so late spans follow them.
type SamplerConsumer struct {
	cfg     Config
	group   GroupConfig
	sampler tailsampler.ReceiptSampler
	logger  *zap.Logger
	// remember is how many recent decisions a partition's new owner loads.
	remember int
	// Skipped counts the messages skipped as not OTLP; nil: not counted.
	Skipped func(ctx context.Context, topic string)
}

// NewSamplerConsumer returns a consumer feeding s.
func NewSamplerConsumer(cfg Config, group GroupConfig, s tailsampler.ReceiptSampler, remember int, logger *zap.Logger) *SamplerConsumer {
	return &SamplerConsumer{cfg: cfg, group: group, sampler: s, logger: logger, remember: remember}
}

// Run consumes until ctx ends.
func (c *SamplerConsumer) Run(ctx context.Context) error {
	cg, err := kgo.NewConsumerGroup(kgo.ConsumerGroupConfig{
		ID:                c.group.ID,
		Brokers:           c.cfg.brokers(),
		Topics:            []string{c.cfg.Topics.Spans},
		SessionTimeout:    c.group.SessionTimeout,
		RebalanceTimeout:  c.group.SessionTimeout,
		HeartbeatInterval: c.group.SessionTimeout / 10,
		StartOffset:       kgo.FirstOffset,
		Timeout:           c.cfg.WriteTimeout,
		// kafka-go waits 5 s after a failed join by default: a sampler
		// started with its broker would idle that long.
		JoinGroupBackoff: time.Second,
	})
	if err != nil {
		return err
	}
	defer cg.Close()
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.logger.Warn("Joining the samplers' consumer group failed; retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		c.runGeneration(ctx, gen)
	}
}

func (c *SamplerConsumer) runGeneration(ctx context.Context, gen *kgo.Generation) {
	assigned := gen.Assignments[c.cfg.Topics.Spans]
	parts := make(map[int]*offsets, len(assigned))
	ids := make([]int, 0, len(assigned))
	for _, a := range assigned {
		parts[a.ID] = newOffsets()
		ids = append(ids, a.ID)
	}
	c.logger.Info("Sampling partitions of the spans topic", zap.Int32("generation", gen.ID), zap.Ints("partitions", ids))
	// Every partition's decisions first, loaded together and remembered at
	// once, before any partition is read: then the shards' queues are
	// empty and remembering is quick. (Loading and remembering partition by
	// partition while the first ones were read waited behind their traffic,
	// seconds a partition, and the last partitions' traces waited that
	// long.)
	loaded := make([][]tailsampler.Decision, len(assigned))
	var wg sync.WaitGroup
	for i, a := range assigned {
		wg.Go(func() { loaded[i] = c.loadDecisions(ctx, a.ID) })
	}
	wg.Wait()
	var all []tailsampler.Decision
	for _, ds := range loaded {
		all = append(all, ds...)
	}
	if err := c.sampler.Remember(ctx, all); err != nil {
		return
	}
	// The commit loop discards what is buffered once every reader of the
	// generation has returned, so that nothing read in this generation is
	// buffered after the discard.
	var readers sync.WaitGroup
	for i, a := range assigned {
		c.logger.Info("Reading a partition of the spans topic", zap.Int("partition", a.ID), zap.Int64("offset", a.Offset),
			zap.Int("decisions_loaded", len(loaded[i])))
		readers.Add(1)
		gen.Start(func(ctx context.Context) {
			defer readers.Done()
			c.readPartition(ctx, a.ID, a.Offset, parts[a.ID])
		})
	}
	gen.Start(func(ctx context.Context) { c.commit(ctx, gen, parts, &readers) })
}

// loadDecisions reads a partition's recent decisions, a few tries while its
// leader may still be moving (a broker restarted, the topic just created);
// nil when they cannot be read (late spans of its traces are then decided
// anew).
func (c *SamplerConsumer) loadDecisions(ctx context.Context, partition int) []tailsampler.Decision {
	var err error
	for try := range 5 {
		// Bounded: a partition must not stay unread behind its decisions.
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		var ds []tailsampler.Decision
		ds, err = loadDecisions(lctx, &c.cfg, partition, c.remember)
		cancel()
		if err == nil || ctx.Err() != nil {
			return ds
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(try+1) * 200 * time.Millisecond):
		}
	}
	c.logger.Warn("Could not load a partition's recent decisions: late spans of its traces are decided anew",
		zap.Int("partition", partition), zap.Error(err))
	return nil
}

// readPartition hands the partition's messages to the sampler from offset
// on, each with a receipt that marks it done in o and in the context of the
// tenant it names (TenantHeader).
func (c *SamplerConsumer) readPartition(ctx context.Context, partition int, offset int64, o *offsets) {
	r := kgo.NewReader(kgo.ReaderConfig{Brokers: c.cfg.brokers(), Topic: c.cfg.Topics.Spans, Partition: partition,
		MaxBytes: maxMessageBytes, MinBytes: fetchMinBytes, MaxWait: fetchMaxWait,
		ErrorLogger: readerErrors(c.logger, c.cfg.Topics.Spans)})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		c.logger.Error("Cannot read a partition of the spans topic", zap.Int("partition", partition), zap.Error(err))
		return
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("Reading the spans topic failed", zap.Int("partition", partition), zap.Error(err))
			}
			return
		}
		o.read(m.Offset)
		off := m.Offset
		tctx := tenant.NewContext(ctx, tenantOf(m.Headers))
		for {
			err = c.sampler.ConsumeRawTracesWithReceipt(tctx, m.Value, tailsampler.NewReceipt(off, func() { o.done(off) }))
			if err == nil {
				break
			}
			if errors.Is(err, otlpwire.ErrMalformed) {
				c.logger.Error("Skipping a malformed message in the spans topic", zap.Int("partition", partition),
					zap.Int64("offset", off), zap.Error(err))
				if c.Skipped != nil {
					c.Skipped(ctx, c.cfg.Topics.Spans)
				}
				o.done(off)
				break
			}
			// The sampler pushes back (memory) or is stopping: try again.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// commit commits the partitions' safe offsets every commit interval, and a
// last time when the generation ends.
func (c *SamplerConsumer) commit(ctx context.Context, gen *kgo.Generation, parts map[int]*offsets, readers *sync.WaitGroup) {
	committed := map[int]int64{}
	flush := func() {
		due := map[int]int64{}
		for p, o := range parts {
			if s := o.safe(); s >= 0 && s != committed[p] {
				due[p] = s
			}
		}
		if len(due) == 0 {
			return
		}
		if err := gen.CommitOffsets(map[string]map[int]int64{c.cfg.Topics.Spans: due}); err != nil {
			c.logger.Warn("Committing offsets of the spans topic failed", zap.Error(err))
			return
		}
		for p, s := range due {
			committed[p] = s
		}
	}
	t := time.NewTicker(c.group.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The partitions may go to other samplers, which read them from
			// the committed offsets: what is buffered must not be decided
			// here on what was read so far (a trace whose error span is yet
			// to be read would be dropped) — discarded at once, before the
			// last commit, which may wait on a coordinator that is busy
			// rebalancing.
			readers.Wait()
			if err := c.sampler.Discard(context.Background()); err != nil {
				c.logger.Warn("Discarding the buffered traces at a rebalance failed", zap.Error(err))
			}
			flush()
			return
		case <-t.C:
			flush()
		}
	}
}
