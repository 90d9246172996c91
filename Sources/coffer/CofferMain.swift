import ArgumentParser
import CofferCLI

/// The `coffer` executable: parses the command line and runs the command. Everything else lives in
/// `CofferCLI` so tests and other tools can reuse it.
@main
struct CofferMain: AsyncMainProtocol {
    typealias Command = Coffer
}
