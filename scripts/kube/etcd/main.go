// Command etcd is etcd's server, built from the go.etcd.io/etcd/server/v3
// module at the version k8s.io/kubernetes pins (the etcd root module does
// not build from the module proxy).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
