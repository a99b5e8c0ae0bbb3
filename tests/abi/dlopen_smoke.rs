// dlopen smoke test from Rust, without crates: what a binding in another language does.
// Opens libggemm.so.0 by path, resolves the entry points by name, and checks that a plan
// from a bad descriptor (K = 1001, not a multiple of 8) is refused with
// GGEMM_ERROR_INVALID_SHAPE and a thread-local message that names K (or desc->k) and 1001.
// Shape checks come before any device query, so the answer is the same with or without a GPU.
//
// Usage: ggemm_dlopen_smoke <path to libggemm.so.0>

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
    fn dlclose(handle: *mut c_void) -> c_int;
}

const RTLD_NOW: c_int = 2;
const GGEMM_SUCCESS: i32 = 0;
const GGEMM_ERROR_INVALID_SHAPE: i32 = 3;

// ggemm_plan_desc as the first header with the optional fields laid it out (80 bytes, before
// weight_layout; the C ABI test pins the offsets): an older caller, which the library accepts.
#[repr(C)]
#[derive(Default)]
struct PlanDesc {
    struct_size: u32,
    device: i32,
    m_capacity: i64,
    n: i64,
    k: i64,
    num_experts: i32,
    weight_mode: i32,
    c_dtype: i32,
    d_dtype: i32,
    bias_dtype: i32,
    generate_c: i32,
    scheduler: i32,
    tile_m: i32,
    tile_n: i32,
    cluster_m: i32,
    sm_margin: i32,
    reserved0: i32,
}

type VersionFn = unsafe extern "C" fn() -> i32;
type StatusStringFn = unsafe extern "C" fn(i32) -> *const c_char;
type PlanDescInitFn = unsafe extern "C" fn(*mut PlanDesc, u32) -> i32;
type PlanCreateFn = unsafe extern "C" fn(*mut *mut c_void, *const PlanDesc) -> i32;
type PlanDestroyFn = unsafe extern "C" fn(*mut c_void) -> i32;
type LastErrorMessageFn = unsafe extern "C" fn(*mut c_char, u64, *mut u64) -> i32;

fn last_dl_error() -> String {
    let message = unsafe { dlerror() };
    if message.is_null() {
        String::from("(no dlerror message)")
    } else {
        unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
    }
}

// Resolves one exported function by name; the caller gives it its C signature.
fn resolve(library: *mut c_void, name: &str) -> *mut c_void {
    let c_name = CString::new(name).unwrap();
    let address = unsafe { dlsym(library, c_name.as_ptr()) };
    if address.is_null() {
        println!("FAIL: dlsym({}): {}", name, last_dl_error());
        std::process::exit(1);
    }
    address
}

fn main() {
    let path = match std::env::args().nth(1) {
        Some(path) => path,
        None => {
            println!("usage: ggemm_dlopen_smoke <path to libggemm.so.0>");
            std::process::exit(2);
        }
    };
    let c_path = CString::new(path.clone()).unwrap();
    let library = unsafe { dlopen(c_path.as_ptr(), RTLD_NOW) };
    if library.is_null() {
        println!("FAIL: dlopen({}): {}", path, last_dl_error());
        std::process::exit(1);
    }

    let (version, status_string, plan_desc_init, plan_create, plan_destroy, last_error_message) = unsafe {
        (
            std::mem::transmute::<*mut c_void, VersionFn>(resolve(library, "ggemm_version")),
            std::mem::transmute::<*mut c_void, StatusStringFn>(resolve(library, "ggemm_status_string")),
            std::mem::transmute::<*mut c_void, PlanDescInitFn>(resolve(library, "ggemm_plan_desc_init")),
            std::mem::transmute::<*mut c_void, PlanCreateFn>(resolve(library, "ggemm_plan_create")),
            std::mem::transmute::<*mut c_void, PlanDestroyFn>(resolve(library, "ggemm_plan_destroy")),
            std::mem::transmute::<*mut c_void, LastErrorMessageFn>(resolve(library, "ggemm_last_error_message")),
        )
    };
    let name_of = |status: i32| -> String {
        unsafe { CStr::from_ptr(status_string(status)) }.to_string_lossy().into_owned()
    };

    let mut failures = 0;
    let loaded_version = unsafe { version() };
    println!("ggemm_version() = {}", loaded_version);
    if loaded_version / 10000 != 0 {
        println!("FAIL: ABI major {} does not match the SONAME libggemm.so.0", loaded_version / 10000);
        failures += 1;
    }

    let mut desc = PlanDesc::default();
    let init_status = unsafe { plan_desc_init(&mut desc, std::mem::size_of::<PlanDesc>() as u32) };
    if init_status != GGEMM_SUCCESS || desc.struct_size as usize != std::mem::size_of::<PlanDesc>() {
        println!("FAIL: ggemm_plan_desc_init: {} (struct_size {})", name_of(init_status), desc.struct_size);
        failures += 1;
    }
    // Valid in every field but K.
    desc.m_capacity = 256;
    desc.n = 128;
    desc.k = 1001;
    desc.num_experts = 8;

    let mut plan: *mut c_void = std::ptr::null_mut();
    let status = unsafe { plan_create(&mut plan, &desc) };
    let mut required: u64 = 0;
    unsafe { last_error_message(std::ptr::null_mut(), 0, &mut required) };
    let mut buffer = vec![0 as c_char; required.max(1) as usize];
    unsafe { last_error_message(buffer.as_mut_ptr(), buffer.len() as u64, std::ptr::null_mut()) };
    let message = unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned();
    println!("ggemm_plan_create(k = 1001) -> {} ({}): \"{}\"", status, name_of(status), message);

    if status != GGEMM_ERROR_INVALID_SHAPE {
        println!("FAIL: expected {} (GGEMM_ERROR_INVALID_SHAPE)", GGEMM_ERROR_INVALID_SHAPE);
        failures += 1;
    }
    // The argument may be named as the contract writes it (K) or as the field (desc->k).
    let names_k = message.contains("desc->k")
        || message.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| word == "K");
    if !names_k || !message.contains("1001") {
        println!("FAIL: the message does not name K (or desc->k) and 1001");
        failures += 1;
    }
    if name_of(GGEMM_ERROR_INVALID_SHAPE) != "GGEMM_ERROR_INVALID_SHAPE" {
        println!("FAIL: ggemm_status_string(3) = {}", name_of(GGEMM_ERROR_INVALID_SHAPE));
        failures += 1;
    }
    if status == GGEMM_SUCCESS {
        unsafe { plan_destroy(plan) };
    }
    unsafe { dlclose(library) };

    if failures > 0 {
        println!("rust dlopen smoke: FAIL ({} failures)", failures);
        std::process::exit(1);
    }
    println!("rust dlopen smoke: PASS");
}
