use halo_macros::halo;

#[halo(why = "Create an order", rate = "5/minute", why = "Again")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
