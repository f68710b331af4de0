package slack_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/slack"
	"github.com/xconn/xconn/connectors/slack/slacktest"
	"github.com/xconn/xconn/protocol"
)

// The Slack connector served against the fake Slack of slacktest (a real
// program leaves APIURL empty for https://slack.com/api/ and serves with
// c.Server().ListenAndServe, as xconn serve slack does). A host signs a
// channel in with the app's tokens and #general, a person writes there,
// the message arrives over Socket Mode, and the answer is posted in
// Slack.
func ExampleNew() {
	fake := slacktest.New(slacktest.Options{})
	fake.AddApp(slacktest.App{AppToken: "xapp-1-A0EXAMPLE1-1-0123456789abcdef", BotToken: "xoxb-1-2-ExampleBotToken0123",
		AppID: "A0EXAMPLE1", TeamID: "T0EXAMPLE1", Team: "Example", BotUserID: "U0BOTUSER1", BotID: "B0BOT00001", BotName: "helper"})
	fake.AddConversation(slacktest.Conversation{ID: "C0GENERAL1", Name: "general"})
	api := fake.Start()
	defer fake.Close()

	dir, err := os.MkdirTemp("", "slack-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	const key = "a-long-random-system-api-key"
	c, err := slack.New(slack.Options{SDK: connector.Options{DataDir: dir, APIKey: key}, APIURL: api})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	served := make(chan error, 1)
	go func() { served <- c.Server().Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	host, _, err := connectortest.Connect(ctx, "http://"+ln.Addr().String(), key)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()
	ch, st, err := host.OpenAndSignIn(ctx, slack.FlowApp, map[string]string{
		"app_token": "xapp-1-A0EXAMPLE1-1-0123456789abcdef", "bot_token": "xoxb-1-2-ExampleBotToken0123", "channel": "C0GENERAL1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("signed in as", st.ConnectionDescriptor.Target.DisplayName)
	if _, err := fake.WaitStats(ctx, "xapp-1-A0EXAMPLE1-1-0123456789abcdef", func(s slacktest.SocketStats) bool { return s.Connections == 1 }); err != nil {
		fmt.Println(err)
		return
	}

	fake.Say("C0GENERAL1", "U0ALICE001", "What is on today?")
	msg, err := host.ExpectMessage(ctx, ch, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("user message:", msg.Text)
	if err := host.Ack(ctx, msg, protocol.AckAccepted); err != nil {
		fmt.Println(err)
		return
	}
	ack, err := host.SendFinal(ctx, ch, protocol.ChatMessagePayload{MessageID: "answer-1", InReplyTo: msg.MessageID, Text: "Standup at 10."})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("answer:", ack.Status)
	for _, m := range fake.Sent("C0GENERAL1") {
		fmt.Println("in #general:", m.Text)
	}
	// Output:
	// signed in as @helper (Example)
	// user message: What is on today?
	// answer: accepted
	// in #general: Standup at 10.
}
