// Package kubernetes is codemode's deployment on Kubernetes, as kustomize
// manifests (base/, and test/ for the test cluster of scripts/kube-up.sh);
// its Go test renders them and checks the names, labels, probes and
// permissions users and the tests rely on.
package kubernetes
