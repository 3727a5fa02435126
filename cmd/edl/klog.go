package main

import (
	"github.com/go-logr/logr"
	log "github.com/inconshreveable/log15"
	"k8s.io/klog/v2"
)

// routeKlog sends what client-go logs through klog (leader election,
// reflectors, event broadcasting) to logger, so that every line on stderr is
// logfmt. client-go's errors become warnings: they are retried, and a person
// should look only when they persist. Its info lines are debug detail; its
// verbose levels are dropped.
func routeKlog(logger log.Logger) {
	klog.SetLogger(logr.New(klogSink{log: logger.New("component", "client-go")}))
}

// klogSink is a logr.LogSink writing to a log15 logger.
type klogSink struct{ log log.Logger }

func (s klogSink) Init(logr.RuntimeInfo) {}

func (s klogSink) Enabled(level int) bool { return level <= 0 }

func (s klogSink) Info(level int, msg string, kv ...any) {
	if level <= 0 {
		s.log.Debug(msg, kv...)
	}
}

func (s klogSink) Error(err error, msg string, kv ...any) {
	if err != nil {
		kv = append(kv, "err", err)
	}
	s.log.Warn(msg, kv...)
}

func (s klogSink) WithValues(kv ...any) logr.LogSink { return klogSink{log: s.log.New(kv...)} }

func (s klogSink) WithName(name string) logr.LogSink {
	return klogSink{log: s.log.New("logger", name)}
}
