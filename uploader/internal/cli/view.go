package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/tbhub/tbhub/uploader/internal/view"
)

func init() {
	commands["view"] = command{"open a hosted experiment in your own TensorBoard: view EXPERIMENT_ID", runView}
}

func runView(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "view", "EXPERIMENT_ID [--port N]")
	var sf serverFlags
	sf.register(fs)
	port := fs.Int("port", 0, "local port to serve on (default: any free port)")
	endpoint := fs.String("endpoint", "", "the read service's gRPC address, if it is not the one the server's handshake names")
	positional, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return missing(env, fs, "which experiment? tbup view EXPERIMENT_ID")
	}
	eid := positional[0]
	c, err := sf.connect(ctx, env, nil)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	remote := c.conn
	if *endpoint != "" {
		if remote, err = dialEndpoint(*endpoint, sf); err != nil {
			return err
		}
		defer remote.Close()
	}
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		return err
	}
	srv := view.New(remote, eid).Server()
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	fmt.Fprintf(env.Stdout, "Serving experiment %s (%s) on %s with your credentials. Run:\n\n  tensorboard --grpc_data_provider=%s\n\nPress Ctrl-C to stop.\n",
		eid, c.info.ExperimentURL(eid), lis.Addr(), lis.Addr())
	return srv.Serve(lis)
}
