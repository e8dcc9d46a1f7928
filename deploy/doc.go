// Package deploy holds what runs inferwatch on Kubernetes and its tests,
// none of which needs a cluster: the Helm chart (helm/inferwatch), rendered
// with Helm's Go SDK and every object decoded strictly into its Kubernetes,
// prometheus-operator or KEDA type; the container image (package image,
// make image); the Grafana dashboard (grafana); and the examples (examples).
//
// It is a module of its own, so that Helm's and Kubernetes' libraries stay
// out of the daemon's build:
//
//	make test-deploy
package deploy
