package waymark

import (
	"context"
	"errors"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// PutMcpServer registers an MCP server in the client's namespace, or replaces the registration of
// the same name (Created is false then): a name, a transport (Streamable HTTP with headers, or a
// stdio command for local development) and the tools runs may call, each with a policy
// (docs/mcp.md). Runs call its tools as ctx.tool("name.tool", args). Answers never carry header or
// environment values ("<redacted>"). A header may instead be a reference (McpHttpTransport's
// HeaderRefs: an MCP_ environment variable or a file each replica reads when it connects), so the
// secret is stored nowhere in Waymark. Needs the admin scope when the server has authentication on.
//
// Retried like a read: a repeat puts the same registration again.
func (c *Client) PutMcpServer(ctx context.Context, server *waymarkv1.McpServer) (*waymarkv1.PutMcpServerResponse, error) {
	if server == nil {
		return nil, errors.New("waymark: PutMcpServer needs a server")
	}
	res, err := c.Mcp.PutMcpServer(ctx, &waymarkv1.PutMcpServerRequest{Namespace: c.namespace, Server: server})
	return res, mapError(err)
}

// ListMcpServers returns the namespace's MCP servers by name, each with its Health as the
// answering replica sees it (nil when that replica has not used the server).
func (c *Client) ListMcpServers(ctx context.Context) ([]*waymarkv1.McpServer, error) {
	res, err := c.Mcp.ListMcpServers(ctx, &waymarkv1.ListMcpServersRequest{Namespace: c.namespace})
	return res.GetServers(), mapError(err)
}

// RemoveMcpServer removes a registration; runs that pinned its tools keep their pin. A name the
// namespace does not have returns *McpServerNotFoundError. Sent once (a repeat of an applied
// removal would answer NOT_FOUND), after waiting for a connection.
func (c *Client) RemoveMcpServer(ctx context.Context, name string) error {
	_, err := c.Mcp.RemoveMcpServer(ctx, &waymarkv1.RemoveMcpServerRequest{Namespace: c.namespace, Name: name})
	return mapError(err)
}
