import CofferAdmin
import CofferStore
import Foundation
import Testing

/// How the panel writes amounts and times, and reads the amounts support types.
@Suite("Panel text")
struct PanelTextTests {
    @Test("amounts have thousands separators; changes a sign")
    func amounts() {
        #expect(PanelText.credits(0) == "0")
        #expect(PanelText.credits(999) == "999")
        #expect(PanelText.credits(120_000) == "120,000")
        #expect(PanelText.credits(1_200_000) == "1,200,000")
        #expect(PanelText.credits(-5_000) == "-5,000")
        #expect(PanelText.credits(.max) == "9,223,372,036,854,775,807")
        #expect(PanelText.credits(.min) == "-9,223,372,036,854,775,808")
        #expect(PanelText.change(400_000) == "+400,000")
        #expect(PanelText.change(-1) == "-1")
        #expect(PanelText.change(0) == "0")
        #expect(PanelText.count(12_345) == "12,345")
    }

    @Test("money: Apple's milliunits in the currency's units, grouped, a thousandth only where there is one")
    func money() {
        #expect(PanelText.money(4_990, currency: "USD") == "4.99 USD")
        #expect(PanelText.money(1_200_000, currency: "EUR") == "1,200.00 EUR")
        #expect(PanelText.money(0, currency: "USD") == "0.00 USD")
        #expect(PanelText.money(995, currency: "USD") == "0.995 USD")
        #expect(PanelText.money(120_000, currency: "JPY") == "120 JPY")
        #expect(PanelText.money(1_234_567_890, currency: "KRW") == "1,234,567.89 KRW")
        #expect(PanelText.money(-500, currency: "USD") == "-0.50 USD")
        #expect(PanelText.money(-4_990, currency: "USD") == "-4.99 USD")
        #expect(PanelText.money(.min, currency: "USD") == "-9,223,372,036,854,775.808 USD")
    }

    @Test("typed amounts: plain or grouped in threes, nothing else, never past Int64")
    func reading() {
        for (text, value) in [
            ("1200000", Int64(1_200_000)), ("1,200,000", 1_200_000), ("1 200 000", 1_200_000), ("1_200", 1_200),
            (" 400000 ", 400_000), ("0", 0), ("9223372036854775807", .max), ("9,223,372,036,854,775,807", .max),
        ] {
            #expect(PanelText.amount(text) == value, "\(text)")
        }
        for text in [
            "", "-5", "+5", "1,20,000", "1,2000", ",100", "100,", "1.5", "١٢٣", "12e3", "9223372036854775808",
            "99999999999999999999", "0x10", "1,,000", "lots",
        ] {
            #expect(PanelText.amount(text) == nil, "\(text)")
        }
    }

    @Test("every amount written reads back as itself")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let value = Int64.random(in: 0 ... .max, using: &generator) >> Int64.random(in: 0...62, using: &generator)
            #expect(PanelText.amount(PanelText.credits(value)) == value)
        }
    }

    @Test("times: UTC, with the admin's zone beside it (its date only when the day differs)")
    func times() throws {
        let date = Date(timeIntervalSince1970: 1_764_110_401)  // 2025-11-25 22:40:01 UTC
        #expect(PanelText.utc(date) == "2025-11-25 22:40:01 UTC")
        #expect(PanelText.time(date, in: nil) == "2025-11-25 22:40:01 UTC")
        #expect(PanelText.time(date, in: TimeZone(identifier: "UTC")) == "2025-11-25 22:40:01 UTC")
        #expect(
            PanelText.time(date, in: TimeZone(identifier: "America/New_York"))
                == "2025-11-25 22:40:01 UTC · 17:40 America/New_York")
        #expect(
            PanelText.time(date, in: TimeZone(identifier: "Asia/Tokyo"))
                == "2025-11-25 22:40:01 UTC · 2025-11-26 07:40 Asia/Tokyo")
        #expect(PanelText.timeZone("Europe/Paris")?.identifier == "Europe/Paris")
        #expect(PanelText.timeZone("Mars/Olympus_Mons") == nil)
        #expect(PanelText.timeZone("") == nil)
        #expect(PanelText.timeZones.first == "UTC" && PanelText.timeZones.contains("Europe/Paris"))
    }
}

/// The CSV the panel exports.
@Suite("CSV exports")
struct CSVTextTests {
    @Test("fields are quoted, quotes doubled, and text a spreadsheet would run as a formula is defused")
    func fields() {
        #expect(CSVText.line(["a", "b,c", "say \"hi\""]) == "\"a\",\"b,c\",\"say \"\"hi\"\"\"\r\n")
        #expect(CSVText.field("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(CSVText.field("+1+cmd") == "\"'+1+cmd\"")
        #expect(CSVText.field("@SUM(A1)") == "\"'@SUM(A1)\"")
        #expect(CSVText.field("-400000") == "\"-400000\"")
        #expect(CSVText.field("line\nbreak") == "\"line\nbreak\"")
        #expect(CSVText.document(header: ["h"], rows: [["1"], ["2"]]) == "\"h\"\r\n\"1\"\r\n\"2\"\r\n")
    }
}

/// The recovery service's last run, as every instance's dashboard reads it.
@Suite("Recovery run record")
struct RecoveryRunTests {
    @Test("a run is kept as text and read back; anything else is no run")
    func roundTrip() throws {
        let run = RecoveryRun(
            at: Date(timeIntervalSince1970: 1_764_110_401.5), read: 3, new: 2, filled: 1, error: "Apple said 401")
        #expect(RecoveryRun(text: run.text) == run)
        #expect(RecoveryRun(text: "{}") == nil && RecoveryRun(text: "not json") == nil)
    }
}
