// The delivery load tool: verified, durable deliveries per second over HTTP on loopback.
//
//   DeliveryLoad wrk --engine sqlite|postgres [--database-url postgres://...] [--instances 1] [--seconds 60]
//       [--warmup 5] [--connections 64] [--customers 1024] [--rate 8000] [--peer] [--mixed]
//   DeliveryLoad run --engine sqlite|postgres [--database-url postgres://...] [--seconds 60]
//       [--connections 64] [--transactions 400000] [--warmup 5] [--check]
//   DeliveryLoad hands [--hands 10000] [--backup-delay 2] [--engine sqlite|postgres]
//   DeliveryLoad webhooks [--seconds 30] [--warmup 5] [--connections 64] [--rate 8000] [--pairs 2]
//   DeliveryLoad support --engine sqlite|postgres [--database-url postgres://...] [--customers 15000,150000,1000000]
//       [--samples 40] [--cli-runs 5]
//   DeliveryLoad cli ARGUMENTS...      (Coffer's command line: `cli migrate --database-url ...`)
//
// `wrk` (the benchmark, Benchmarks/deliveries.sh) starts `coffer serve` (this binary re-run as `DeliveryLoad
// serve ...`, which is Coffer's own command line; several instances on one PostgreSQL database with
// `--instances`), creates customers, signs distinct StoreKit 2 transactions with a simulator chain the server
// trusts, and loads it with wrk for the given time after a warm-up, measuring deliveries per second, latency,
// CPU per delivery and memory. `--peer` first measures the limit in the same run: a bare Hummingbird route
// doing one ES256 verification per request (`DeliveryLoad peer`). `--mixed` then runs a mixed load
// (deliveries, GET /v1/me, spends, grant claims, refund notifications) with each route's figures. After the
// load the servers stop and the ledger is read: every acknowledged delivery must be there once and every
// balance must equal its entries.
//
// `run` is the built-in generator (AsyncHTTPClient, one customer per connection), for any number of
// connections and for the test command's bounded `--check` run, which needs no wrk.
import ArgumentParser
import CofferCLI
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
/// Runs an async command (opening the existential, so the async `run` is the one called).
func runAsync<Command: AsyncParsableCommand>(_ command: inout Command) async throws { try await command.run() }

do {
    switch arguments.first {
    case "serve", "cli":
        // Coffer's own command line, as the `coffer` executable runs it (`cli` drops its own name: `cli migrate`).
        do {
            var command = try Coffer.parseAsRoot(arguments.first == "cli" ? Array(arguments.dropFirst()) : arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await runAsync(&asynchronous)
            } else {
                try command.run()
            }
        } catch {
            Coffer.exit(withError: error)
        }
    case "peer":
        let options = Options(arguments: arguments)
        try await Peer.run(
            port: options.int("port", 8090),
            publicKeyPEM: try String(contentsOfFile: options.string("key", "leaf.pem"), encoding: .utf8))
    case "run":
        exit(try await Builtin.run(Options(arguments: arguments)))
    case "wrk":
        exit(try await WrkBenchmark.run(Options(arguments: arguments)))
    case "hands":
        exit(try await Hands.run(Options(arguments: arguments)))
    case "webhooks":
        exit(try await WebhookBenchmark.run(Options(arguments: arguments)))
    case "support":
        exit(try await SupportScale.run(Options(arguments: arguments)))
    case "receiver":
        try await WebhookReceiver.run(port: Options(arguments: arguments).int("port", 8091))
    default:
        progress(
            "usage: DeliveryLoad wrk|run|hands|webhooks|support [options] (see Benchmarks/Sources/DeliveryLoad/main.swift)"
        )
        exit(2)
    }
} catch {
    progress("FAILED: \(error)")
    exit(1)
}
