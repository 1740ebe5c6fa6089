package store

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
)

type resourceKey struct {
	tenant string
	id     uint64
}

// maxCachedResources bounds the reader's resource cache; past it, the cache
// starts again empty.
const maxCachedResources = 16384

// resourcesInUseEvery is how often a lookup starts a read of its tenant's
// resources in use (queries/resources_in_use.sql) into the cache: a trace's
// spans then seldom name a resource the cache lacks, which costs the lookup
// one more statement after its spans' (a resource new since the last read,
// once).
const resourcesInUseEvery = time.Minute

// maxResourcesInUse bounds what one read of a tenant's resources in use
// adds to the cache, a sixteenth of it: the newest.
const maxResourcesInUse = maxCachedResources / 16

// renewResourcesInUse starts a read of the tenant's resources in use into
// the cache in the background, once a resourcesInUseEvery; it returns the
// read under way, if any.
func (r *Reader) renewResourcesInUse(ctx context.Context, tn string, now time.Time) <-chan struct{} {
	return r.resRefresh.start(ctx, now, tn, func(ctx context.Context) error {
		_, err := r.readResources(ctx, tn, r.resourcesInUse, Params{"max_resources": uint64(maxResourcesInUse)})
		return err
	})
}

// readResources reads resources of tenant tn by q (resource_id and
// attributes a row) with p, caches them and returns them by id.
func (r *Reader) readResources(ctx context.Context, tn, q string, p Params) (map[uint64]map[string]string, error) {
	p["tenant"] = tn
	read := map[uint64]map[string]string{}
	err := r.conn.Query(ctx, q, p, func(b []byte) error {
		var row struct {
			ID         uint64            `json:"resource_id"`
			Attributes map[string]string `json:"attributes"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		read[row.ID] = nonNil(row.Attributes)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.cacheResources(tn, read)
	return read, nil
}

// spanResources are the resources of a trace's spans that the reader's cache
// has (nil for those it lacks), by id.
type spanResources map[uint64]map[string]string

// missing is the ids of res that the cache lacks, as
// fragments/trace_resources.sql takes them: decimal, sorted, joined by
// commas; "" for none.
func (res spanResources) missing() string {
	var ids []uint64
	for id, m := range res {
		if m == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(list, ",")
}

// cachedResources looks up the resources that ids name (0 for rows that
// carry theirs), of tenant tn, in the cache.
func (r *Reader) cachedResources(tn string, ids []uint64) spanResources {
	res := spanResources{}
	r.resMu.Lock()
	defer r.resMu.Unlock()
	for _, id := range ids {
		if _, ok := res[id]; ok || id == 0 {
			continue
		}
		res[id] = r.resCache[resourceKey{tn, id}]
	}
	return res
}

// setResources gives each span the resource its row names (ids[i] for
// spans[i]), from res or, for those res lacks, read, which it caches; a
// resource neither has is empty. Spans of one resource share one copy of it.
func (r *Reader) setResources(tn string, spans []model.Span, ids []uint64, res spanResources, read map[uint64]map[string]string) {
	r.cacheResources(tn, read)
	maps.Copy(res, read)
	for id, m := range res {
		// The cache's maps are never handed out: the trace gets a copy.
		res[id] = maps.Clone(nonNil(m))
	}
	for i, id := range ids {
		if id != 0 {
			spans[i].Resource = res[id]
		}
	}
}

// cacheResources adds resources read from the store, of tenant tn, to the
// cache.
func (r *Reader) cacheResources(tn string, read map[uint64]map[string]string) {
	if len(read) == 0 {
		return
	}
	r.resMu.Lock()
	defer r.resMu.Unlock()
	if r.resCache == nil || len(r.resCache)+len(read) > maxCachedResources {
		r.resCache = make(map[resourceKey]map[string]string, len(read))
	}
	for id, m := range read {
		r.resCache[resourceKey{tn, id}] = m
	}
}

// lineResources returns the resources that ids name (0 for rows that carry
// theirs), of tenant tn: from have (copies the caller owns), else the cache,
// else the store in one read, which it caches; one none has is empty.
func (r *Reader) lineResources(ctx context.Context, tn string, ids []uint64, have spanResources) (map[uint64]map[string]string, error) {
	found := map[uint64]map[string]string{}
	var lack []uint64
	for _, id := range ids {
		if _, ok := found[id]; ok || id == 0 {
			continue
		}
		if m := have[id]; m != nil {
			found[id] = m
			continue
		}
		found[id] = nil
		lack = append(lack, id)
	}
	if len(lack) == 0 {
		return found, nil
	}
	cached := r.cachedResources(tn, lack)
	var read map[uint64]map[string]string
	if list := cached.missing(); list != "" {
		var err error
		if read, err = r.readResources(ctx, tn, r.resourcesByID, Params{"resource_ids": list}); err != nil {
			return nil, err
		}
	}
	for id, m := range cached {
		if m == nil {
			m = read[id]
		}
		found[id] = maps.Clone(nonNil(m)) // the cache's maps are never handed out
	}
	return found, nil
}
