use halo_macros::halo;

#[halo(sunset = "31/12/2026")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
