import CofferCore
import Configuration
import Foundation

/// A setting's value as flags, `COFFER_*` variables and the config file give it, parsed into its range with an
/// error naming the key: what ``ServeSettings`` and ``SupportSettings`` read through.
struct SettingValues: Sendable {
    let reader: ConfigReader

    /// The value as text (a JSON file holds numbers, booleans and lists as such; flags and variables hold text).
    func text(_ key: String) -> String? {
        let configKey = ConfigKey(key)
        var value: String? = reader.string(forKey: configKey)
        if value == nil, let number = reader.int(forKey: configKey) { value = String(number) }
        if value == nil, let flag = reader.bool(forKey: configKey) { value = String(flag) }
        if value == nil, let list = reader.stringArray(forKey: configKey) { value = list.joined(separator: ",") }
        return value?.trimmingCharacters(in: CharacterSet.whitespaces)
    }

    /// A whole number in `range`, `value` when unset.
    func number(_ key: String, default value: Int, in range: ClosedRange<Int>) throws(SettingsError) -> Int {
        guard let raw = text(key) else { return value }
        guard let parsed = Int(raw), range.contains(parsed) else {
            throw SettingsError(
                key: key, value: raw, expected: "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return parsed
    }

    /// One of a type's raw values, `value` when unset.
    func choice<T: RawRepresentable>(_ key: String, default value: T, _ type: T.Type, names: String)
        throws(SettingsError) -> T where T.RawValue == String
    {
        guard let raw = text(key) else { return value }
        guard let parsed = T(rawValue: raw) else { throw SettingsError(key: key, value: raw, expected: names) }
        return parsed
    }
}

/// What a support command reads of `coffer serve`'s settings, through the same reader (flags, `COFFER_*`, the
/// config file): where the database is, and which environment, wallet and catalog its server keeps.
struct SupportSettings: Sendable {
    var database: ServeSettings.Database
    var databaseTimeout: Int
    var environment: AppStoreEnvironment
    /// Whether the environment was named (a flag, a variable or the config file) rather than the default.
    var environmentNamed: Bool
    var wallet: WalletMode
    /// Whether the wallet was named rather than the default.
    var walletNamed: Bool
    var catalogFile: String
    /// Whether the catalog was named (a flag, a variable or the config file) rather than the default.
    var catalogNamed: Bool

    /// Reads and checks them.
    ///
    /// - Throws: ``SettingsError`` naming the key and the value.
    init(reader: ConfigReader) throws(SettingsError) {
        let values = SettingValues(reader: reader)
        database = try ServeSettings.Database(url: values.text("database.url") ?? "sqlite:coffer.sqlite")
        databaseTimeout = try values.number("database.timeout", default: 5, in: 1...300)
        environment = try values.choice(
            "environment", default: .sandbox, AppStoreEnvironment.self, names: "Sandbox or Production")
        environmentNamed = values.text("environment") != nil
        wallet = try values.choice("wallet", default: .device, WalletMode.self, names: "device or server")
        walletNamed = values.text("wallet") != nil
        catalogNamed = values.text("catalog") != nil
        catalogFile = values.text("catalog") ?? "catalog.json"
    }
}
