use halo_macros::halo;

#[halo(locale("zh_CN", name = "下单"))]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
