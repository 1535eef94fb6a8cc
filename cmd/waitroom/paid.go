package main

import (
	"context"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/web/adminapi"
)

// newPaid builds this replica's record of what visitors paid, telling obs
// (the metrics; nil when they are off) of each event, and adds the worker
// that adds its counts to Redis every paid.FlushEvery and once more at
// shutdown.
func (a *app) newPaid(obs paid.Observer) (*paid.Recorder, error) {
	rec, err := paid.New(a.rdb, paid.Options{Queues: a.cfg.Queues, Observer: obs, Timeout: a.cfg.RequestTimeout})
	if err != nil {
		return nil, err
	}
	a.workers = append(a.workers, loop(func(ctx context.Context) { rec.Run(ctx, a.log) }))
	return rec, nil
}

// defencesView is the admin API's view of a queue's defences
// (httpapi.Options.Defences): the price this replica applies, the queue's
// human_check, the networks file (file: WAITROOM_NETWORKS_FILE is set;
// networks nil without one) and the human check's provider (nil: none),
// with what rec counted.
func (a *app) defencesView(rec *paid.Recorder, file bool, networks *netclass.Watcher, human *humancheck.Checker) adminapi.DefencesFunc {
	src := paid.Sources{Price: a.cfg.Defaults.Price, Settings: queue.NewInspector(a.store), NetworksFile: file, Networks: networks, Human: human}
	return paid.Viewer{Recorder: rec, Policy: src.Policy}.View
}

// networkPrefixes reads the networks file's prefixes per class name as
// last loaded, for waitroom_networks_prefixes (metrics.SetNetworks).
func networkPrefixes(w *netclass.Watcher) func() map[string]int {
	return func() map[string]int {
		_, sizes := w.Loaded()
		out := make(map[string]int, len(sizes))
		for c, n := range sizes {
			out[c.String()] = n
		}
		return out
	}
}
