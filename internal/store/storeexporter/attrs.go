package storeexporter

import "go.opentelemetry.io/otel/attribute"

func signalAttr(signal string) attribute.KeyValue { return attribute.String("signal", signal) }
