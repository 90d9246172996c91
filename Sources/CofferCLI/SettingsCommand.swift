import ArgumentParser

/// `coffer settings`: every setting of `coffer serve`, as the table docs/operations.md holds.
struct SettingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "List every setting of coffer serve: its config key, COFFER_* variable, flag and meaning.",
        discussion: "Prints a Markdown table, the settings reference of docs/operations.md (generated from this).")

    func run() {
        print(Self.table())
    }

    /// The Markdown table.
    static func table() -> String {
        var lines = ["| key | variable | flag | meaning |", "|---|---|---|---|"]
        for setting in ServeSettings.keys {
            let flag = setting.serveFlag.map { "`\($0)`" } ?? ""
            lines.append(
                "| `\(setting.key)` | `\(setting.environmentVariable)` | \(flag) | "
                    + setting.help.replacingOccurrences(of: "|", with: "\\|") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
