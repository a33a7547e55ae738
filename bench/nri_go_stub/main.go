// A Go NRI plugin on the official library (containerd/nri v0.6.1 pkg/stub), used only
// as the baseline in bench/nri_latency.py. Its CreateContainer does what mokka's does
// for a devices-annotated pod, so the two are timed on comparable work: look at the
// pod annotation, find PATH in the container's env, answer two bind mounts + 6 env vars
// (the same 518-byte adjustment as mokka's). Built by bench/fetch-go-baseline.sh.
package main

import (
	"context"
	"flag"
	"os"
	"strings"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"github.com/sirupsen/logrus"
)

const root = "/opt/nvml-mock"

type plugin struct{}

func (plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	if pod.GetAnnotations()["nvml-mock.nvidia.com/devices"] != "true" {
		return adj, nil, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range ctr.GetEnv() {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[len("PATH="):]
		}
	}
	adj.AddMount(&api.Mount{Destination: root, Type: "bind", Source: "/var/lib/nvml-mock",
		Options: []string{"rbind", "rprivate", "nosuid", "nodev", "ro"}})
	adj.AddMount(&api.Mount{Destination: root + "/driver/config", Type: "bind",
		Source: "/var/lib/nvml-mock/driver/config", Options: []string{"rbind", "rprivate", "nosuid", "nodev"}})
	adj.AddEnv("PATH", root+"/driver/usr/bin:"+path)
	adj.AddEnv("LD_LIBRARY_PATH", root+"/driver/usr/lib64")
	adj.AddEnv("MOCK_NVML_CONFIG", root+"/driver/config/config.yaml")
	adj.AddEnv("MOCK_PCI_ROOT", root)
	adj.AddEnv("GFD_MACHINE_TYPE_FILE", root+"/driver/config/machine-type")
	adj.AddEnv("MOCK_IB", "off")
	return adj, nil, nil
}

func main() {
	socket := flag.String("socket-path", "/var/run/nri/nri.sock", "NRI socket")
	name := flag.String("plugin-name", "go-baseline", "plugin name")
	idx := flag.String("plugin-index", "10", "plugin index")
	flag.Parse()
	logrus.SetLevel(logrus.ErrorLevel) // as mokka runs with --log-level=error in the bench
	s, err := stub.New(plugin{}, stub.WithPluginName(*name), stub.WithPluginIdx(*idx),
		stub.WithSocketPath(*socket), stub.WithOnClose(func() { os.Exit(0) }))
	if err != nil {
		logrus.Fatalf("stub.New: %v", err)
	}
	if err := s.Run(context.Background()); err != nil {
		logrus.Fatalf("stub.Run: %v", err)
	}
}
