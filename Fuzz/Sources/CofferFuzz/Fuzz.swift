import CFuzzDriver
import CofferAPI
import CofferAdmin
import CofferCore
import Foundation

@testable import CofferAppStore

/// SwiftPM names a Swift executable's entry `CofferFuzz_main` and makes it `main`; it hands over to libFuzzer.
@_cdecl("CofferFuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    // The in-process server for the route target starts before libFuzzer counts allocations, so what it keeps
    // for its whole life is not taken for a leak of the first input.
    _ = RouteHarness.shared
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzz(data, size) }
}

/// libFuzzer's entry point. The first byte picks the parser, the rest is its input:
/// 0 JWS splitting and header decoding, 1 Apple payload decoding (transaction, renewal info, notification),
/// 2 PKCS#7 receipt container (BER), 3 receipt payload (DER attributes), 4 strict JSON, 5 legacy
/// transaction receipts, 6 certificates (DER, parsed as a trusted root), 7 the client API's
/// request bodies, 8 numbers read from query strings (the page of a user search), 9 every route of an
/// in-process server with the input as a query parameter, form field, JSON value or path component (see
/// ``RouteHarness``: an answer of 500 or more counts as a crash). Every parser must refuse bad input with an
/// error, never crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = [UInt8](UnsafeBufferPointer(start: start, count: count))
    guard let selector = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let data = Data(input)
    switch selector % 10 {
    case 0:
        if let jws = try? JWS(compact: String(decoding: input, as: UTF8.self)) { _ = try? jws.header() }
    case 1:
        _ = try? AppleJSON.decode(JWSTransactionDecodedPayload.self, from: data)
        _ = try? AppleJSON.decode(JWSRenewalInfoDecodedPayload.self, from: data)
        _ = try? AppleJSON.decode(ResponseBodyV2DecodedPayload.self, from: data)
    case 2:
        _ = try? PKCS7SignedData(ber: input)
    case 3:
        _ = try? ReceiptPayload.decode(input)
    case 4:
        try? StrictJSON.validate(data)
    case 5:
        _ = LegacyReceipts.transactionId(fromTransactionReceipt: String(decoding: input, as: UTF8.self))
    case 6:
        _ = try? ChainVerifier(rootCertificates: [data], cache: nil)
    case 9:
        RouteHarness.shared?.run(input)
    case 8:
        let text = String(decoding: input, as: UTF8.self)
        if let page = try? AdminService.page(text) { precondition(AdminService.pages.contains(page)) }
    default:
        // What the server decodes from a request body, with the server's strict decoder.
        let decoder = StrictJSONDecoder()
        _ = try? decoder.decode(TransactionRequest.self, from: data)
        _ = try? decoder.decode(BackupRequest.self, from: data)
        _ = try? decoder.decode(SpendRequest.self, from: data)
        _ = try? decoder.decode(NotificationRequest.self, from: data)
        _ = try? decoder.decode(ReceiptVerifyRequest.self, from: data)
        _ = try? decoder.decode([String: JSONValue].self, from: data)
    }
    return 0
}
