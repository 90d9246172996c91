/// SplitMix64: a small random generator whose whole sequence follows from its seed, so a schedule drawn
/// from it replays exactly.
public struct SeededGenerator: RandomNumberGenerator {
    /// The generator's state; the seed to start with.
    public var state: UInt64

    /// A generator starting at `seed`.
    public init(state seed: UInt64) { state = seed }

    /// The next value.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// A promise a long-running test found broken, with what it found.
public struct Broken: Error, CustomStringConvertible {
    /// What was found.
    public let description: String

    /// A broken promise.
    public init(description: String) { self.description = description }
}

/// Seeds to run, as a long-running test reads them from its environment variable: `N`, `A-B` or `A,B,C`
/// (mixed, e.g. `1-100,512`).
public enum SeedList {
    /// The seeds `text` names; `fallback` when it names none.
    public static func parse(_ text: String?, fallback: String) -> [UInt64] {
        var seeds: [UInt64] = []
        for part in (text ?? fallback).split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            if bounds.count == 2, bounds[0] <= bounds[1] {
                seeds += Array(bounds[0]...bounds[1])
            } else if let seed = bounds.first {
                seeds.append(seed)
            }
        }
        return seeds.isEmpty && text != nil ? parse(nil, fallback: fallback) : seeds
    }
}
