import CofferAppStore
import Foundation
import Testing

/// A JSON Schema validator for exactly the keywords Coffer's OpenAPI 3.1 document uses (`scripts/openapi.py`):
/// `$ref` to `#/components/schemas/NAME`, `anyOf`, `type` (one or a list), `properties`, `required`,
/// `additionalProperties`, `items`, `minItems`/`maxItems`, `enum`, `format` (`date-time`, `uuid`, `int64`),
/// `pattern`, `minimum`/`maximum`, `minLength`/`maxLength`, and `description`. Any other keyword, format or
/// reference throws ``Unsupported``, so the document cannot use something this validator would silently pass.
///
/// ``validate(_:against:at:)`` answers every failure as a readable line starting with its JSON path, e.g.
/// `$.purchases[0].status: "x" is not one of ["pending", "delivered"]`; no failures means the value is valid.
struct JSONSchemaValidator {
    /// A schema the validator cannot check: an unknown keyword, format or reference, or a keyword's argument
    /// of the wrong shape.
    struct Unsupported: Error, CustomStringConvertible {
        /// What and where.
        let description: String
    }

    /// The formats checked; every other one is ``Unsupported``.
    static let formats: Set<String> = ["date-time", "uuid", "int64"]
    /// The types `type` may name.
    static let types: Set<String> = ["null", "boolean", "object", "array", "number", "integer", "string"]
    /// The only references the document makes.
    static let referencePrefix = "#/components/schemas/"

    /// `components.schemas`, by name.
    let schemas: [String: JSONValue]

    /// A validator over `schemas`, each checked for keywords it does not know.
    init(schemas: [String: JSONValue]) throws {
        self.schemas = schemas
        for (name, schema) in schemas { try check(schema, at: Self.referencePrefix + name) }
    }

    /// A validator over an OpenAPI document's `components.schemas`.
    init(document: JSONValue) throws {
        guard case .object(let root) = document, case .object(let components)? = root["components"],
            case .object(let schemas)? = components["schemas"]
        else { throw Unsupported(description: "the document has no components.schemas") }
        try self.init(schemas: schemas)
    }

    /// Throws ``Unsupported`` for anything in `schema` (and the schemas inside it) this validator does not check:
    /// an unknown keyword, format, type or reference, a pattern it cannot compile, an argument of the wrong shape.
    func check(_ schema: JSONValue, at location: String) throws {
        guard case .object(let keywords) = schema else {
            if case .bool = schema { return }
            throw Unsupported(description: "\(location): a schema is an object or a boolean")
        }
        for (keyword, argument) in keywords {
            let here = "\(location)/\(keyword)"
            switch keyword {
            case "$ref": _ = try resolve(argument, at: here)
            case "anyOf":
                guard case .array(let choices) = argument, !choices.isEmpty else {
                    throw Unsupported(description: "\(here): a non-empty array of schemas")
                }
                for (index, choice) in choices.enumerated() { try check(choice, at: "\(here)/\(index)") }
            case "type": _ = try typeNames(argument, at: here)
            case "properties":
                for (name, property) in try object(argument, at: here) { try check(property, at: "\(here)/\(name)") }
            case "required": _ = try strings(argument, at: here)
            case "additionalProperties", "items": try check(argument, at: here)
            case "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum":
                _ = try number(argument, at: here)
            case "enum":
                guard case .array(let values) = argument, !values.isEmpty else {
                    throw Unsupported(description: "\(here): a non-empty array")
                }
            case "format":
                guard case .string(let format) = argument, Self.formats.contains(format) else {
                    throw Unsupported(description: "\(here): \(Self.render(argument)) is not a format this checks")
                }
            case "pattern": _ = try regex(argument, at: here)
            case "description":
                guard case .string = argument else { throw Unsupported(description: "\(here): a string") }
            default:
                throw Unsupported(
                    description: "\(location): the keyword \"\(keyword)\" is not one this validator checks")
            }
        }
    }

    /// Every way `value` breaks `schema`, each a line starting with its JSON path; empty when it is valid.
    ///
    /// - Throws: ``Unsupported`` for a schema this validator cannot check.
    func validate(_ value: JSONValue, against schema: JSONValue, at path: String = "$") throws -> [String] {
        guard case .object(let keywords) = schema else {
            if case .bool(let allowed) = schema { return allowed ? [] : ["\(path): no value is allowed here"] }
            throw Unsupported(description: "\(path): a schema is an object or a boolean")
        }
        var failures: [String] = []
        for keyword in keywords.keys.sorted() {
            let argument = keywords[keyword]!
            let here = "the schema's \(keyword) at \(path)"
            switch keyword {
            case "description", "properties", "additionalProperties", "required":
                continue  // Metadata, and the object keywords checked together below.
            case "$ref":
                failures += try validate(value, against: try resolve(argument, at: here), at: path)
            case "anyOf":
                failures += try anyOf(value, argument, at: path)
            case "type":
                let names = try typeNames(argument, at: here)
                if !names.contains(where: { Self.value(value, is: $0) }) {
                    let expected = names.count == 1 ? names[0] : "any of \(names.joined(separator: ", "))"
                    failures.append("\(path): \(Self.render(value)) is not of type \(expected)")
                }
            case "enum":
                guard case .array(let allowed) = argument else { throw Unsupported(description: "\(here): an array") }
                if !allowed.contains(value) {
                    let list = allowed.map { Self.render($0) }.joined(separator: ", ")
                    failures.append("\(path): \(Self.render(value)) is not one of [\(list)]")
                }
            case "format":
                failures += try format(value, argument, at: path)
            case "pattern":
                if case .string(let text) = value, try !text.contains(regex(argument, at: here)) {
                    failures.append(
                        "\(path): \(Self.render(value)) does not match the pattern \(Self.render(argument))")
                }
            case "minimum", "maximum":
                let bound = try number(argument, at: here)
                if case .number(let number) = value, keyword == "minimum" ? number < bound : number > bound {
                    failures.append(
                        "\(path): \(Self.render(value)) is \(keyword == "minimum" ? "below" : "above") the "
                            + "\(keyword) \(Self.render(argument))")
                }
            case "minLength", "maxLength":
                if case .string(let text) = value {
                    failures += try Self.count(text.unicodeScalars.count, keyword, argument, "characters", at: path)
                }
            case "minItems", "maxItems":
                if case .array(let items) = value {
                    failures += try Self.count(items.count, keyword, argument, "items", at: path)
                }
            case "items":
                if case .array(let items) = value {
                    for (index, item) in items.enumerated() {
                        failures += try validate(item, against: argument, at: "\(path)[\(index)]")
                    }
                }
            default:
                throw Unsupported(description: "\(path): the keyword \"\(keyword)\" is not one this validator checks")
            }
        }
        if case .object(let members) = value { failures += try object(members, keywords, at: path) }
        return failures
    }

    /// `properties`, `required` and `additionalProperties` for an object value.
    private func object(_ members: [String: JSONValue], _ keywords: [String: JSONValue], at path: String) throws
        -> [String]
    {
        var failures: [String] = []
        let properties =
            try keywords["properties"].map { try object($0, at: "the schema's properties at \(path)") } ?? [:]
        for name in try keywords["required"].map({ try strings($0, at: "the schema's required at \(path)") }) ?? []
        where members[name] == nil {
            failures.append("\(path): the required property \"\(name)\" is missing")
        }
        for name in members.keys.sorted() {
            let member = members[name]!
            let memberPath = Self.path(path, name)
            if let property = properties[name] {
                failures += try validate(member, against: property, at: memberPath)
            } else if let additional = keywords["additionalProperties"] {
                if case .bool(false) = additional {
                    failures.append("\(path): the property \"\(name)\" is not allowed (additionalProperties is false)")
                } else {
                    failures += try validate(member, against: additional, at: memberPath)
                }
            }
        }
        return failures
    }

    /// `anyOf`: valid when one choice has no failures; otherwise every choice's failures.
    private func anyOf(_ value: JSONValue, _ argument: JSONValue, at path: String) throws -> [String] {
        guard case .array(let choices) = argument else {
            throw Unsupported(description: "the schema's anyOf at \(path): an array")
        }
        var reasons: [String] = []
        for (index, choice) in choices.enumerated() {
            let failures = try validate(value, against: choice, at: path)
            if failures.isEmpty { return [] }
            reasons.append("(\(index + 1)) " + failures.joined(separator: "; "))
        }
        return ["\(path): \(Self.render(value)) matches none of anyOf: " + reasons.joined(separator: " ")]
    }

    /// `format`: `date-time` (RFC 3339), `uuid` (RFC 9562's text form) and `int64` (an integer in its range).
    private func format(_ value: JSONValue, _ argument: JSONValue, at path: String) throws -> [String] {
        guard case .string(let format) = argument, Self.formats.contains(format) else {
            throw Unsupported(description: "\(path): \(Self.render(argument)) is not a format this checks")
        }
        switch (format, value) {
        case ("date-time", .string(let text)) where !Self.isDateTime(text),
            ("uuid", .string(let text)) where !Self.isUUID(text):
            return ["\(path): \(Self.render(value)) is not a \(format)"]
        case ("int64", .number(let number)) where number < Double(Int64.min) || number >= Double(Int64.max):
            return ["\(path): \(Self.render(value)) is out of the int64 range"]
        default: return []
        }
    }

    /// The schema a `$ref` names.
    private func resolve(_ argument: JSONValue, at location: String) throws -> JSONValue {
        guard case .string(let reference) = argument, reference.hasPrefix(Self.referencePrefix),
            let schema = schemas[String(reference.dropFirst(Self.referencePrefix.count))]
        else { throw Unsupported(description: "\(location): \(Self.render(argument)) names no schema of the document") }
        return schema
    }

    private func typeNames(_ argument: JSONValue, at location: String) throws -> [String] {
        let names: [String]
        switch argument {
        case .string(let name): names = [name]
        case .array: names = try strings(argument, at: location)
        default: names = []
        }
        guard !names.isEmpty, names.allSatisfy(Self.types.contains) else {
            throw Unsupported(description: "\(location): \(Self.render(argument)) is not a type or a list of types")
        }
        return names
    }

    private func object(_ argument: JSONValue, at location: String) throws -> [String: JSONValue] {
        guard case .object(let members) = argument else { throw Unsupported(description: "\(location): an object") }
        return members
    }

    private func strings(_ argument: JSONValue, at location: String) throws -> [String] {
        guard case .array(let values) = argument else { throw Unsupported(description: "\(location): an array") }
        return try values.map { value in
            guard case .string(let text) = value else { throw Unsupported(description: "\(location): strings only") }
            return text
        }
    }

    private func number(_ argument: JSONValue, at location: String) throws -> Double {
        guard case .number(let number) = argument else { throw Unsupported(description: "\(location): a number") }
        return number
    }

    private func regex(_ argument: JSONValue, at location: String) throws -> Regex<AnyRegexOutput> {
        guard case .string(let pattern) = argument, let regex = try? Regex(pattern) else {
            throw Unsupported(description: "\(location): \(Self.render(argument)) is not a pattern this can compile")
        }
        return regex
    }

    /// `minLength`/`maxLength`/`minItems`/`maxItems`: `count` against the keyword's bound.
    private static func count(_ count: Int, _ keyword: String, _ argument: JSONValue, _ unit: String, at path: String)
        throws -> [String]
    {
        guard case .number(let bound) = argument else {
            throw Unsupported(description: "\(path): \(keyword) is a number")
        }
        let fits = keyword.hasPrefix("min") ? Double(count) >= bound : Double(count) <= bound
        return fits ? [] : ["\(path): \(count) \(unit), the \(keyword) is \(render(argument))"]
    }

    /// Whether `value` is of the JSON Schema type `name` (an integer is any number without a fraction).
    static func value(_ value: JSONValue, is name: String) -> Bool {
        switch (name, value) {
        case ("null", .null), ("boolean", .bool), ("object", .object), ("array", .array), ("number", .number),
            ("string", .string):
            true
        case ("integer", .number(let number)): number.isFinite && number.rounded(.towardZero) == number
        default: false
        }
    }

    /// RFC 3339's date-time: the shape, and each field in its range.
    static func isDateTime(_ text: String) -> Bool {
        let shape =
            #/
              ([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?
              ([Zz]|[+-]([0-9]{2}):([0-9]{2}))
            /#
        guard let match = text.wholeMatch(of: shape) else { return false }
        let month = Int(match.2)!
        let day = Int(match.3)!
        let fields = [
            (month, 1...12), (day, 1...31), (Int(match.4)!, 0...23), (Int(match.5)!, 0...59), (Int(match.6)!, 0...60),
        ]
        let offset = [(match.9.map { Int($0)! } ?? 0, 0...23), (match.10.map { Int($0)! } ?? 0, 0...59)]
        let longest = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return (fields + offset).allSatisfy { $0.1.contains($0.0) } && day <= longest[month - 1]
    }

    /// A UUID's text form, in either case.
    static func isUUID(_ text: String) -> Bool {
        text.wholeMatch(of: /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/) != nil
    }

    /// `path` followed by the member `name`: `.name`, or `["name"]` when it is not an identifier.
    static func path(_ path: String, _ name: String) -> String {
        name.wholeMatch(of: /[A-Za-z_$][A-Za-z0-9_$]*/) != nil ? "\(path).\(name)" : "\(path)[\(render(.string(name)))]"
    }

    /// `value` as compact JSON, cut short past 80 characters.
    static func render(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
        if case .number(let number) = value, number.rounded(.towardZero) == number, abs(number) < 1e15 {
            text = String(Int64(number))
        }
        return text.count > 80 ? text.prefix(77) + "..." : text
    }

    /// Parses JSON text.
    static func parse(_ data: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: data) }
}

/// The validator itself: it rejects what it must, accepts what it must, and refuses a schema it cannot check.
@Suite("OpenAPI schema validator")
struct OpenAPISchemaValidatorTests {
    /// A small document's schemas, in the shapes `scripts/openapi.py` writes.
    static let schemas = #"""
        {"Status": {"type": "string", "enum": ["pending", "delivered"]},
         "Purchase": {"type": "object", "additionalProperties": false, "required": ["id", "status"],
                      "properties": {"id": {"type": "string", "format": "uuid"},
                                     "status": {"$ref": "#/components/schemas/Status"},
                                     "at": {"type": "string", "format": "date-time"},
                                     "credits": {"type": "integer", "format": "int64", "minimum": 1,
                                                 "maximum": 1000}}},
         "Answer": {"type": "object", "additionalProperties": false,
                    "required": ["supportId", "purchases", "backup"],
                    "properties": {"supportId": {"type": "string", "pattern": "^_[0-9a-f]{12}$", "maxLength": 13},
                                   "purchases": {"type": "array", "maxItems": 2,
                                                 "items": {"$ref": "#/components/schemas/Purchase"}},
                                   "backup": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                                   "flag": {"type": ["boolean", "null"], "description": "Either"}}}}
        """#

    static func validator() throws -> JSONSchemaValidator {
        guard case .object(let schemas) = try JSONSchemaValidator.parse(Data(Self.schemas.utf8)) else {
            throw JSONSchemaValidator.Unsupported(description: "not an object")
        }
        return try JSONSchemaValidator(schemas: schemas)
    }

    /// The failures of `json` against the `Answer` schema.
    static func failures(_ json: String) throws -> [String] {
        try validator().validate(
            try JSONSchemaValidator.parse(Data(json.utf8)),
            against: .object(["$ref": .string("#/components/schemas/Answer")]))
    }

    static let id = "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"

    static let valid = #"""
        {"supportId": "_0123456789ab", "backup": null, "flag": true,
         "purchases": [{"id": "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "status": "pending",
                        "at": "2026-01-01T00:00:00Z", "credits": 100},
                       {"id": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "status": "delivered",
                        "at": "2026-02-28T23:59:60.5+01:00"}]}
        """#

    @Test("a valid answer has no failures, and each way of breaking it is named with its JSON path")
    func rejects() throws {
        #expect(try Self.failures(Self.valid) == [])
        let first = "$.purchases[0]"
        let cases: [(String, String, String)] = [
            (#""supportId": "_0123456789ab""#, #""supportId": 5"#, "$.supportId: 5 is not of type string"),
            (
                #""status": "pending""#, #""status": "x""#,
                #"\#(first).status: "x" is not one of ["pending", "delivered"]"#
            ),
            (#""supportId": "_0123456789ab", "#, "", #"$: the required property "supportId" is missing"#),
            (
                #""flag": true"#, #""flag": true, "extra": 1"#,
                #"$: the property "extra" is not allowed (additionalProperties is false)"#
            ),
            (
                #""_0123456789ab""#, #""_0123456789AB""#,
                #"$.supportId: "_0123456789AB" does not match the pattern "^_[0-9a-f]{12}$""#
            ),
            (
                #""backup": null"#, #""backup": "none""#,
                #"$.backup: "none" matches none of anyOf: (1) $.backup: "none" is not of type integer "#
                    + #"(2) $.backup: "none" is not of type null"#
            ),
            (#"00:00:00Z""#, #"00:00:00""#, #"\#(first).at: "2026-01-01T00:00:00" is not a date-time"#),
            (#""2026-01-01T"#, #""2026-02-30T"#, #"\#(first).at: "2026-02-30T00:00:00Z" is not a date-time"#),
            (#"T00:00:00Z""#, #"T24:00:00Z""#, #"\#(first).at: "2026-01-01T24:00:00Z" is not a date-time"#),
            (
                #""e621e1f8-c36c"#, #""e621e1f8-c36"#,
                #"\#(first).id: "e621e1f8-c36\#(Self.id.dropFirst(13))" is not a uuid"#
            ),
            (#""credits": 100"#, #""credits": 0"#, "\(first).credits: 0 is below the minimum 1"),
            (#""credits": 100"#, #""credits": 1001"#, "\(first).credits: 1001 is above the maximum 1000"),
            (#""credits": 100"#, #""credits": 1.5"#, "\(first).credits: 1.5 is not of type integer"),
            (#""credits": 100"#, #""credits": true"#, "\(first).credits: true is not of type integer"),
            (#""flag": true"#, #""flag": 1"#, "$.flag: 1 is not of type any of boolean, null"),
        ]
        for (original, replacement, failure) in cases {
            let json = Self.valid.replacingOccurrences(of: original, with: replacement)
            #expect(json != Self.valid, "\(original) is not in the valid answer")
            #expect(try Self.failures(json) == [failure])
        }
        let long = Self.valid.replacingOccurrences(of: "_0123456789ab", with: "_0123456789abcd")
        #expect(try Self.failures(long).contains("$.supportId: 15 characters, the maxLength is 13"))
        let purchase = #"{"id": "\#(Self.id)", "status": "pending"}"#
        let three =
            #"{"supportId": "_0123456789ab", "backup": 1, "purchases": [\#(purchase), \#(purchase), "#
            + #"\#(purchase)]}"#
        #expect(try Self.failures(three) == ["$.purchases: 3 items, the maxItems is 2"])
        #expect(try Self.failures("[]") == ["$: [] is not of type object"])
    }

    @Test("a keyword, format or reference the validator does not check makes it throw, never pass")
    func refusesWhatItCannotCheck() throws {
        let validator = try Self.validator()
        for schema in [
            #"{"type": "string", "const": "x"}"#, #"{"oneOf": [{"type": "string"}]}"#,
            #"{"type": "string", "format": "email"}"#, ##"{"$ref": "#/components/schemas/Nothing"}"##,
            ##"{"$ref": "other.json#/X"}"##, #"{"type": "text"}"#, #"{"type": "string", "nullable": true}"#,
            #"{"type": "string", "pattern": "(["}"#,
        ] {
            let parsed = try JSONSchemaValidator.parse(Data(schema.utf8))
            #expect(throws: JSONSchemaValidator.Unsupported.self, "\(schema)") {
                try validator.validate(.string("x"), against: parsed)
            }
            #expect(throws: JSONSchemaValidator.Unsupported.self, "\(schema)") {
                try validator.check(parsed, at: "#")
            }
        }
        // Found when the validator is made, not only when a value reaches the keyword.
        let nested = #"{"A": {"type": "object", "properties": {"b": {"type": "string", "examples": ["x"]}}}}"#
        guard case .object(let schemas) = try JSONSchemaValidator.parse(Data(nested.utf8)) else {
            throw JSONSchemaValidator.Unsupported(description: "not an object")
        }
        #expect(throws: JSONSchemaValidator.Unsupported.self) { try JSONSchemaValidator(schemas: schemas) }
    }
}
