// Package mcp serves an xAgent host to Model Context Protocol clients
// (Claude Desktop, Cursor, VS Code, agent frameworks), on the official Go
// SDK: the tools of the user's signed-in channels, the built-in channel
// tools (connector_channels_list, connector_message_send), messages_read,
// sign-in as tools, and each channel's Descriptor and history as
// resources with update notifications.
//
// An [Inbox] is the host's Agent: it keeps each inbound message until a
// client reads it with messages_read, and only then lets the host
// acknowledge it, so that a client that crashes loses nothing. A [Server]
// fronts the host:
//
//	inbox := mcp.NewInbox(mcp.InboxOptions{})
//	h, _ := host.New(host.Options{Store: db, Delivery: db, Agent: inbox})
//	_ = h.Start(ctx)
//	srv, _ := mcp.New(ctx, mcp.Options{Host: h, Inbox: inbox, UserID: "me"})
//	defer srv.Close()
//	err := srv.Run(ctx, srv.StdioTransport(os.Stdin, os.Stdout)) // or srv.HTTPHandler(token)
//
// Call [Server.Changed] from the host's OnEvent so that tools and
// resources follow sign-ins and Descriptor changes. Every input is
// bounded (Options) and malformed input gets a clear JSON-RPC or tool
// error; nothing the server sends or logs holds an API key, form input
// or a channel's binding. The command "xconn mcp" is this package behind
// command-line flags; see README.md beside this file.
package mcp
