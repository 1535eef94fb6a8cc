// Package charttest tests the Helm chart in deploy/helm/waitroom without a
// cluster: helm lint, helm template for several value sets, every rendered
// object decoded strictly into its Kubernetes API type, the chart's
// contract (security context, probes, secrets only by reference, the
// forward-auth Ingress) and a scan for anything that looks like a secret.
//
// It is a module of its own so that the service's go.mod does not list
// the Kubernetes API packages. The tests need helm: on PATH, or in
// $(go env GOPATH)/bin, where scripts/install-tools.sh test puts it.
package charttest
