//! Generates `include/zkrecipes.h` from `src/` with the pinned cbindgen (see Cargo.toml).
//!
//! The header is committed: `scripts/test-c` and CI rebuild this crate and fail if the header
//! changed (`git diff --exit-code include/zkrecipes.h`). cbindgen only rewrites the file when its
//! content differs, so an unchanged build does not touch it.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml is unreadable");
    // The version macros come from the workspace version, the one source of truth.
    let version =
        |part: &str| env::var(format!("CARGO_PKG_VERSION_{part}")).expect("CARGO_PKG_VERSION_*");
    let macros = format!(
        "/** The version of this header (compare with zkr_version() at run time). */\n\
         #define ZKR_VERSION_MAJOR {}\n#define ZKR_VERSION_MINOR {}\n#define ZKR_VERSION_PATCH {}\n\
         #define ZKR_VERSION_STRING \"{}\"\n",
        version("MAJOR"),
        version("MINOR"),
        version("PATCH"),
        env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION"),
    );
    config.after_includes = Some(match config.after_includes.take() {
        Some(extra) => format!("\n{macros}\n{extra}"),
        None => format!("\n{macros}"),
    });

    let out = crate_dir.join("..").join("include").join("zkrecipes.h");
    // A soname, so that programs record the ABI they were linked against (0.x: every minor may
    // break it). scripts/install-c installs the matching links.
    let major = version("MAJOR");
    let soname = if major == "0" {
        format!("libzkrecipes.so.0.{}", version("MINOR"))
    } else {
        format!("libzkrecipes.so.{major}")
    };
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }

    // Failing here (rather than warning) keeps a stale committed header from passing the check.
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate include/zkrecipes.h: {e}"));
    bindings.write_to_file(&out);
}
