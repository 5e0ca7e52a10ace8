// Command demo-client is a small MCP client session against codemode: it
// starts `codemode serve` over stdio with the official Go SDK, lists the
// tools, and calls run_python three times to show that the session keeps
// state and that the data packages are there.
//
//	go run ./examples/demo-client [path/to/codemode]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bin := "bin/codemode"
	if len(os.Args) > 1 {
		bin = os.Args[1]
	}
	if err := run(bin); err != nil {
		fmt.Fprintln(os.Stderr, "demo-client:", err)
		os.Exit(1)
	}
}

func run(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "serve")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "codemode-demo", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", bin, err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	fmt.Printf("connected to %s %s\n", init.ServerInfo.Name, init.ServerInfo.Version)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	listing, _ := json.Marshal(tools.Tools)
	fmt.Printf("tools/list: %d tool(s), %d bytes: %s\n\n", len(tools.Tools), len(listing), tools.Tools[0].Name)

	for _, code := range []string{
		"import platform, os\ncounter = 41\nprint('python', platform.python_version(), 'as uid', os.getuid())",
		"counter += 1\ncounter",
		"import pandas as pd\ndf = pd.DataFrame({'n': range(1, counter + 1)})\nprint(len(df), 'rows, sum', df.n.sum())",
	} {
		fmt.Printf(">>> run_python(%q)\n", code)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
		if err != nil {
			return err
		}
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				fmt.Println(indent(t.Text))
			}
		}
		if res.IsError {
			return fmt.Errorf("run_python failed")
		}
	}
	fmt.Println("\nThe second call saw `counter` from the first: the session kept its state.")
	return nil
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
